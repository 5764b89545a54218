"""The alternative estimators and the estimate() rules around them (dropping, inf, flags)."""

import math

import numpy as np
import pytest

from seakr_integrations.outputs import Continuation, SelfAwareOutput
from seakr_integrations.uncertainty import (
    ESTIMATORS,
    eigenscore,
    energy,
    estimate,
    ln_entropy,
    multi_perplexity,
    perplexity,
    probe_prompt,
    prompt_uncertainty,
)

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
    with pytest.raises(ValueError, match="known: " + ", ".join(ESTIMATORS)):
        estimate(out, "entropy")


def test_uncertainty_is_json_serialisable():
    import json

    u = estimate(_output(["a", "b"], [[1.0, 0.0], [0.0, 1.0]]))
    assert json.loads(json.dumps(u.to_dict()))["estimator"] == "eigenscore"
