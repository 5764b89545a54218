"""Our top-k/top-p filter keeps exactly the tokens vLLM's own implementation keeps."""

import pytest
import torch

from seakr_integrations.backends.sampling import top_k_top_p_filter


def _reference(logits, k, p):
    """vLLM's rule written the slow, obvious way: sort, mask below the k-th, mask the low-probability tail."""
    out = logits.clone()
    for r in range(logits.shape[0]):
        row = logits[r]
        kth = row.sort(descending=True).values[int(k[r]) - 1]
        masked = row.masked_fill(row < kth, float("-inf"))
        asc, order = masked.sort()
        cum = asc.softmax(-1).cumsum(-1)
        drop = cum <= 1 - p[r]
        drop[-1] = False
        asc = asc.masked_fill(drop, float("-inf"))
        out[r] = torch.empty_like(row).scatter_(0, order, asc)
    return out


@pytest.mark.parametrize("seed", range(5))
def test_matches_reference_on_random_logits(seed):
    g = torch.Generator().manual_seed(seed)
    logits = torch.randn(6, 1000, generator=g) * 3
    k = torch.tensor([50, 1, 5, 1000, 50, 200])
    p = torch.tensor([0.9, 0.9, 1.0, 0.5, 0.999, 0.1])
    ours, ref = top_k_top_p_filter(logits, k, p), _reference(logits, k, p)
    assert torch.equal(torch.isinf(ours), torch.isinf(ref))
    assert torch.equal(ours[~torch.isinf(ours)], ref[~torch.isinf(ref)])


def test_ties_at_the_kth_logit_are_kept_like_vllm():
    # bf16-style ties: 40 tokens share the 3rd-largest value; vLLM keeps all of them (more than the window of k+16).
    logits = torch.full((1, 500), -5.0)
    logits[0, :2] = torch.tensor([3.0, 2.5])
    logits[0, 10:50] = 1.0
    ours = top_k_top_p_filter(logits, torch.tensor([3]), torch.tensor([1.0]))
    ref = _reference(logits, torch.tensor([3]), torch.tensor([1.0]))
    assert int((~torch.isinf(ours)).sum()) == 42
    assert torch.equal(torch.isinf(ours), torch.isinf(ref))


def test_matches_vllms_own_function():
    vllm_ops = pytest.importorskip(
        "vllm.v1.sample.ops.topk_topp_sampler", reason="vLLM is not installed; the reference test above still runs"
    )
    g = torch.Generator().manual_seed(7)
    logits = torch.randn(8, 4096, generator=g) * 2
    k = torch.tensor([50] * 8)
    p = torch.tensor([0.9] * 8)
    theirs = vllm_ops.apply_top_k_top_p_pytorch(logits.clone(), k, p)
    ours = top_k_top_p_filter(logits, k, p)
    assert torch.equal(torch.isinf(ours), torch.isinf(theirs))
