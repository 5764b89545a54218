"""HFBackend on real models: the tiny random Llama built in conftest and SmolLM2 from PyPI."""

import numpy as np
import pytest
import torch

from seakr_integrations.backends.base import eos_scoring_sequence
from seakr_integrations.params import SamplingConfig

PROMPT = "Question: What is the capital of France?\nAnswer:"


def test_output_shape_and_fields(hf_tiny):
    outs = hf_tiny.generate([PROMPT, "Question: Who wrote Hamlet?\nAnswer:"], k=3, max_tokens=5)
    assert len(outs) == 2
    for out in outs:
        assert out.layer == hf_tiny.default_layer == 1  # L/2 - 1 for 4 layers
        assert out.prompt_token_ids == hf_tiny.tokenize(out.prompt)
        assert out.greedy.eos_vector is None and len(out.samples) == 3
        for c in [out.greedy, *out.samples]:
            assert 1 <= len(c.token_ids) <= 5
            assert len(c.logprobs) == len(c.token_ids) == len(c.logit_lse)
            assert all(lp <= 0 for lp in c.logprobs)
            assert c.finish_reason in ("stop", "length")
        assert out.eos_vectors().shape == (3, 128) and out.eos_vectors().dtype == np.float32


def test_greedy_is_the_argmax_path(hf_tiny):
    out = hf_tiny.generate([PROMPT], k=2, max_tokens=4)[0]
    ids = torch.tensor([out.prompt_token_ids + out.greedy.token_ids[:-1]])
    with torch.no_grad():
        logits = hf_tiny.model(input_ids=ids).logits[0, len(out.prompt_token_ids) - 1 :]
    assert logits.argmax(-1).tolist() == out.greedy.token_ids
    expected = torch.log_softmax(logits.float(), -1).gather(1, torch.tensor(out.greedy.token_ids)[:, None])[:, 0]
    np.testing.assert_allclose(out.greedy.logprobs, expected.numpy(), atol=1e-4)


@pytest.mark.parametrize("source", ["mlp", "residual"])
def test_in_loop_eos_vectors_equal_the_scoring_pass(hf_tiny, source):
    """The vector read during decoding is the one at EOS fed after the sample (last token replaced)."""
    out = hf_tiny.generate([PROMPT], k=4, max_tokens=6, source=source, layer=2)[0]
    sequences = [eos_scoring_sequence(out.prompt_token_ids, s.token_ids, hf_tiny.eos_token_id) for s in out.samples]
    assert all(seq[-1] == hf_tiny.eos_token_id for seq in sequences)
    assert any(s.finish_reason == "length" for s in out.samples)  # so a real token was replaced by EOS
    expected = hf_tiny.last_token_vectors(sequences, layer=2, source=source)
    # fp32 noise from different batch shapes only; a wrong read-out position differs by O(|v|).
    np.testing.assert_allclose(out.eos_vectors(), expected, atol=1e-4 * np.abs(expected).max(), rtol=0)


def test_residual_source_is_hf_hidden_states_after_the_layer(hf_tiny):
    seq = hf_tiny.tokenize(PROMPT) + [hf_tiny.eos_token_id]
    with torch.no_grad():
        hidden = hf_tiny.model(input_ids=torch.tensor([seq]), output_hidden_states=True).hidden_states
    got = hf_tiny.last_token_vectors([seq], layer=1, source="residual")[0]
    np.testing.assert_allclose(got, hidden[2][0, -1].numpy(), atol=1e-5)
    mlp = hf_tiny.last_token_vectors([seq], layer=1, source="mlp")[0]
    assert not np.allclose(mlp, got)


def test_same_seed_same_samples_other_seed_differs(hf_tiny):
    a = hf_tiny.generate([PROMPT], k=3, max_tokens=5, seed=1)[0]
    b = hf_tiny.generate([PROMPT], k=3, max_tokens=5, seed=1)[0]
    c = hf_tiny.generate([PROMPT], k=3, max_tokens=5, seed=2)[0]
    assert [s.token_ids for s in a.samples] == [s.token_ids for s in b.samples]
    assert [s.token_ids for s in a.samples] != [s.token_ids for s in c.samples]


def test_timings_are_recorded(hf_tiny):
    hf_tiny.generate([PROMPT], k=2, max_tokens=3)
    t = hf_tiny.last_timings
    assert 0 < t["readout_s"] < t["total_s"]


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda b: b.generate([]), "prompts is empty"),
        (lambda b: b.generate("a prompt"), "list of strings"),
        (lambda b: b.generate(["ok", "   "]), "prompt 1 is empty"),
        (lambda b: b.generate([PROMPT], k=1), "at least 2"),
        (lambda b: b.generate([PROMPT], layer=4), r"0\.\.3"),
        (lambda b: b.generate(["word " * 600]), r"60\d tokens.*context of 512"),
        (lambda b: b.generate([PROMPT, PROMPT], [SamplingConfig()]), "list of 1 item.*for 2 prompt"),
        (lambda b: b.generate([PROMPT, PROMPT], [SamplingConfig(layer=1), SamplingConfig(layer=2)]), "same layer"),
        (lambda b: b.generate([PROMPT, PROMPT], [SamplingConfig(), SamplingConfig(source="residual")]), "same layer"),
    ],
)
def test_bad_input_is_a_clear_value_error(hf_tiny, call, message):
    with pytest.raises(ValueError, match=message):
        call(hf_tiny)


def test_per_prompt_configs_equal_separate_calls(hf_tiny):
    """One call with a config per prompt returns what separate calls with those configs return."""
    a, b = SamplingConfig(k=3, max_tokens=4), SamplingConfig(k=2, max_tokens=6, seed=7)
    together = hf_tiny.generate([PROMPT, "Question: Who wrote Hamlet?\nAnswer:"], [a, b])
    alone = [hf_tiny.generate([PROMPT], a)[0], hf_tiny.generate(["Question: Who wrote Hamlet?\nAnswer:"], b)[0]]
    for x, y in zip(together, alone, strict=True):
        assert [s.token_ids for s in x.samples] == [s.token_ids for s in y.samples]
        np.testing.assert_allclose(x.eos_vectors(), y.eos_vectors(), atol=1e-5)
    assert len(together[0].samples) == 3 and len(together[1].samples) == 2


@pytest.mark.slow
def test_smollm2_eos_and_stop_semantics(hf_smollm2):
    """A real instruct model: samples end by EOS, by a stop string, or by length, and every one has a vector."""
    prompt = hf_smollm2.chat_prompt("Name one fruit.")
    out = hf_smollm2.generate([prompt], SamplingConfig(k=12, max_tokens=12, stop=(" ",)))[0]
    reasons = {(s.finish_reason, s.stop_reason) for s in out.samples}
    assert ("stop", " ") in reasons
    for s in out.samples:
        assert s.eos_vector is not None and np.isfinite(s.eos_vector).all()
        if s.stop_reason == " ":
            assert " " not in s.text
        if s.finish_reason == "stop" and s.stop_reason is None:
            assert s.token_ids[-1] == hf_smollm2.eos_token_id
        if s.finish_reason == "length":
            assert len(s.token_ids) == 12


@pytest.mark.slow
def test_smollm2_known_answer_is_less_uncertain_than_nonsense(hf_smollm2):
    from seakr_integrations.uncertainty import estimate

    def score(question):
        prompt = hf_smollm2.chat_prompt(f"Answer briefly. {question}")
        return estimate(hf_smollm2.generate([prompt], k=10, max_tokens=24)[0]).value

    assert np.isfinite(score("What is the capital of France?"))


def test_min_tokens_masks_eos_for_picking_only(hf_tiny, monkeypatch):
    """Before ``min_tokens`` no EOS id can be picked, by the greedy row or the samples; the log-probabilities stay
    those of the raw distribution (as vLLM reports them), so a forced token still reads as unlikely."""
    first = hf_tiny.generate([PROMPT], k=2, max_tokens=4)[0].greedy.token_ids[0]
    monkeypatch.setattr(hf_tiny, "_stop_ids", {hf_tiny.eos_token_id, first})  # the greedy first token now ends it
    ended = hf_tiny.generate([PROMPT], k=2, max_tokens=4)[0].greedy
    assert ended.token_ids == [first] and ended.finish_reason == "stop"
    out = hf_tiny.generate([PROMPT], SamplingConfig(k=6, max_tokens=4, min_tokens=2))[0]
    for c in [out.greedy, *out.samples]:
        assert len(c.token_ids) >= 2 and first not in c.token_ids[:2]
    with torch.no_grad():
        logits = hf_tiny.model(input_ids=torch.tensor([out.prompt_token_ids])).logits[0, -1].float()
    raw = torch.log_softmax(logits, -1)[out.greedy.token_ids[0]]
    assert out.greedy.token_ids[0] == int(logits.masked_fill(torch.arange(len(logits)) == first, -1e9).argmax())
    np.testing.assert_allclose(out.greedy.logprobs[0], float(raw), atol=1e-4)
