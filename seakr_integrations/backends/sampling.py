"""Top-k then top-p filtering with vLLM's exact rule, without sorting the whole vocabulary: shared by ``HFBackend`` and
vLLM's logits processor (``vllm_sampling``), so both back-ends sample alike (the rule: docs/design/backends.md)."""

from __future__ import annotations

import torch

_TIE_MARGIN = 16


def top_k_top_p_filter(logits: torch.Tensor, top_k: torch.Tensor, top_p: torch.Tensor) -> torch.Tensor:
    """Rows of ``logits`` with everything outside vLLM's top-k/top-p set at ``-inf``.

    Args:
        logits: ``(n, vocab)`` temperature-scaled logits.
        top_k: ``(n,)`` integers in ``[1, vocab]``.
        top_p: ``(n,)`` floats in ``(0, 1]``.
    """
    vocab = logits.shape[-1]
    window = min(vocab, int(top_k.max()) + _TIE_MARGIN)
    values, ids = logits.topk(window, dim=-1)  # descending
    kth = values.gather(1, (top_k - 1).clamp(max=window - 1)[:, None].long())
    keep = values >= kth  # vLLM keeps every logit tied with the k-th
    ties_overflow = keep[:, -1] & (window < vocab)
    probs = torch.softmax(values.masked_fill(~keep, float("-inf")).float(), dim=-1)
    mass_before = probs.cumsum(-1) - probs  # probability of the strictly more likely kept tokens
    keep &= mass_before < top_p[:, None]  # == vLLM's "drop where ascending cumsum <= 1 - p"
    keep[:, 0] = True
    out = torch.full_like(logits, float("-inf"))
    out.scatter_(1, ids, values.masked_fill(~keep, float("-inf")))
    for row in torch.nonzero(ties_overflow).flatten().tolist():  # more ties than the window holds: exact path
        out[row] = _full_sort_filter(logits[row], int(top_k[row]), float(top_p[row]))
    return out


def _full_sort_filter(row: torch.Tensor, top_k: int, top_p: float) -> torch.Tensor:
    ordered, order = row.sort(descending=True)
    keep = ordered >= ordered[top_k - 1]
    probs = torch.softmax(ordered.masked_fill(~keep, float("-inf")).float(), dim=-1)
    keep &= (probs.cumsum(-1) - probs) < top_p
    keep[0] = True
    out = torch.full_like(row, float("-inf"))
    out[order[keep]] = ordered[keep]
    return out
