"""The alternative estimators and the estimate() rules around them (dropping, inf, flags)."""

import math

import numpy as np
import pytest

from seakr_integrations.outputs import Continuation, SelfAwareOutput
from seakr_integrations.uncertainty import REGISTRY, estimate, probe_prompt, prompt_uncertainty
from seakr_integrations.uncertainty.eigenscore import eigenscore
from seakr_integrations.uncertainty.energy import energy
from seakr_integrations.uncertainty.ln_entropy import ln_entropy
from seakr_integrations.uncertainty.multi_perplexity import multi_perplexity
from seakr_integrations.uncertainty.perplexity import perplexity

LN_HALF = math.log(0.5)


def test_perplexity_hand_computed():
    assert perplexity([LN_HALF, LN_HALF]) == pytest.approx(2.0)
    assert perplexity([math.log(0.25), 0.0]) == pytest.approx(2.0)  # exp(-(ln .25)/2) = 2
    assert perplexity([]) == math.inf
    assert perplexity([float("nan")]) == math.inf


def test_multi_perplexity_and_ln_entropy_hand_computed():
    samples = [[LN_HALF, LN_HALF], [math.log(0.25)]]
    assert multi_perplexity(samples) == pytest.approx((2.0 + 4.0) / 2)
    assert ln_entropy(samples) == pytest.approx((math.log(2) + math.log(4)) / 2)
    with pytest.raises(ValueError):
        ln_entropy([])


def test_energy_hand_computed_and_unavailable_without_logits():
    assert energy([2.0, 4.0]) == pytest.approx(-3.0)
    with pytest.raises(ValueError, match="HFBackend"):
        energy(None)


@pytest.mark.parametrize(
    ("reply", "logprobs", "expected"),
    [(" Yes, I do.", [math.log(0.8)], 0.2), ("No", [math.log(0.7)], 0.7), (" Maybe", [0.0], 1.0)],
)
def test_prompt_uncertainty(reply, logprobs, expected):
    assert prompt_uncertainty(reply, logprobs) == pytest.approx(expected)


def test_probe_prompt_rejects_empty_question():
    assert "Who wrote Hamlet?" in probe_prompt("Who wrote Hamlet?")
    with pytest.raises(ValueError, match="empty"):
        probe_prompt("  ")


def _output(texts, vectors, logprobs=None):
    samples = [
        Continuation(t, [1, 2], logprobs or [LN_HALF, LN_HALF], "stop", eos_vector=np.asarray(v, dtype=np.float32))
        for t, v in zip(texts, vectors, strict=True)
    ]
    greedy = Continuation("Paris", [1, 2], [LN_HALF, LN_HALF], "stop", logit_lse=[1.0, 3.0])
    return SelfAwareOutput("q", [0], greedy, samples, layer=3, source="mlp")


def test_estimate_drops_empty_samples_before_scoring():
    vectors = [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]
    out = _output(["a", "  ", "c"], vectors)
    u = estimate(out)
    assert u.num_samples == 2 and u.num_dropped == 1
    assert u.value == pytest.approx(eigenscore([vectors[0], vectors[2]]))
    assert (u.layer, u.source, u.note) == (3, "mlp", None)


def test_fewer_than_two_kept_samples_is_maximally_uncertain_with_reason():
    u = estimate(_output(["a", "", " "], [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]))
    assert u.value == math.inf and u.num_samples == 1 and "at least 2" in u.note


def test_non_finite_vector_is_flagged():
    u = estimate(_output(["a", "b"], [[1.0, np.nan], [0.0, 1.0]]))
    assert u.value == math.inf and not u.is_finite and "non-finite" in u.note


def test_estimate_other_estimators_and_unknown_name():
    out = _output(["a", "b"], [[1.0, 0.0], [0.0, 1.0]])
    assert estimate(out, "perplexity").value == pytest.approx(2.0)
    assert estimate(out, "multi_perplexity").value == pytest.approx(2.0)
    assert estimate(out, "ln_entropy").value == pytest.approx(math.log(2))
    assert estimate(out, "energy").value == pytest.approx(-2.0)
    with pytest.raises(ValueError, match="known: " + ", ".join(REGISTRY)):
        estimate(out, "entropy")


def test_uncertainty_is_json_serialisable():
    import json

    u = estimate(_output(["a", "b"], [[1.0, 0.0], [0.0, 1.0]]))
    assert json.loads(json.dumps(u.to_dict()))["estimator"] == "eigenscore"


# ------------------------------------------------------------------------------------------------------- registry
def _reply(text, p):
    """A probe call's output: its greedy reply alone (k=0)."""
    return SelfAwareOutput("probe", [0], Continuation(text, [7], [math.log(p)], "stop"), [], layer=3, source="mlp")


def _only(output, needs):
    """``output`` with everything an estimator does not declare in ``needs`` taken away (or made unusable)."""
    if "probe" in needs:
        return output  # the estimator reads the probe's reply, which is all there is
    samples = [] if "samples" not in needs else output.samples
    samples = [
        Continuation(
            s.text,
            s.token_ids,
            s.logprobs if "sample_logprobs" in needs else [math.nan],
            s.finish_reason,
            eos_vector=s.eos_vector if "vectors" in needs else None,
        )
        for s in samples
    ]
    g = output.greedy
    greedy = Continuation(
        g.text,
        g.token_ids,
        g.logprobs if "greedy_logprobs" in needs else [math.nan] * len(g.token_ids),
        g.finish_reason,
        logit_lse=g.logit_lse if "logits" in needs else None,
    )
    return SelfAwareOutput(output.prompt, output.prompt_token_ids, greedy, samples, output.layer, output.source)


@pytest.mark.parametrize("name", list(REGISTRY))
def test_every_registered_estimator_computes_from_what_it_declares_it_needs(name):
    entry = REGISTRY[name]
    full = (
        _reply(" Yes", 0.75) if "probe" in entry.needs else _output(["a", "b", "c"], [[1, 0, 0], [0, 1, 0], [0, 0, 1]])
    )
    u = estimate(_only(full, entry.needs), name)
    assert u.estimator == name and math.isfinite(u.value) and u.note is None
    assert u == estimate(full, name)  # the inputs it does not declare play no part
    assert u == entry.score(full, 1e-3)


def test_registry_lists_every_estimator_once_with_valid_needs():
    from seakr_integrations.uncertainty import Estimator, estimator_names, estimators_for
    from seakr_integrations.uncertainty.registry import NEEDS

    assert estimator_names() == (
        "eigenscore",
        "perplexity",
        "min_token_prob",
        "multi_perplexity",
        "ln_entropy",
        "energy",
        "prompt",
    )
    assert all(e.needs and e.needs <= NEEDS and e.summary and REGISTRY[e.name] is e for e in REGISTRY.values())
    assert estimators_for() == estimator_names()[:-1]  # one generate call feeds all but the probe
    assert "energy" not in estimators_for(NEEDS - {"logits", "probe"})
    assert estimators_for(NEEDS) == estimator_names()
    with pytest.raises(ValueError, match=r"needs \['hunch'\]"):
        Estimator("vibes", frozenset({"samples", "hunch"}), "", lambda output, alpha: None)


@pytest.mark.parametrize("bad", ["vibes", "EigenScore", "", None, 3])
def test_check_estimator_lists_the_choices(bad):
    from seakr_integrations.uncertainty.registry import check_estimator

    with pytest.raises(ValueError, match=rf"estimator={bad!r}: choose one of eigenscore, .*, energy, prompt$"):
        check_estimator(bad)
    assert check_estimator("prompt") == "prompt"


def test_prompt_estimator_scores_the_probe_reply_and_an_unsent_probe_is_uncertain():
    from seakr_integrations.params import SamplingConfig
    from seakr_integrations.uncertainty.prompt import PROBE_TOKENS, probe_sampling, unprobed

    assert estimate(_reply("No.", 0.7), "prompt").value == pytest.approx(0.7)
    assert estimate(_reply(" Yes", 0.8), "prompt").value == pytest.approx(0.2)
    sampling = probe_sampling(SamplingConfig(k=5, seed=7, layer=2, source="residual", min_tokens=3))
    assert (sampling.k, sampling.max_tokens, sampling.stop, sampling.min_tokens) == (0, PROBE_TOKENS, ("\n",), 0)
    assert (sampling.seed, sampling.layer, sampling.source) == (7, 2, "residual")
    u = unprobed("too long")
    assert u.value == math.inf and u.estimator == "prompt" and u.note == "too long"
