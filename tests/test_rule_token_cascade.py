"""``TokenCascade``: the greedy step's own token probabilities decide outside the band, the samples inside it; the
band comes from the calibration profile unless given."""

import warnings

from fakes import FakeRetriever, Reply, ScriptedBackend
from rule_support import QUESTION, SMALL, TOWER, is_step, sampled

from seakr_integrations.calibration import DeltaProfile, UncalibratedDeltaWarning, resolve_rules
from seakr_integrations.reasoning import SeaKR, SeaKRConfig
from seakr_integrations.reasoning.decisions import GateReason
from seakr_integrations.reasoning.rules import FinalMargin, TokenCascade


def respond(prompt, config):
    if not is_step(config) or "Context:" in prompt:
        return Reply("So the answer is France.")
    return Reply("The Eiffel Tower is in Paris.", spread=5.0, low=("Paris",))


def answer(band):
    backend = ScriptedBackend(respond)
    config = SeaKRConfig(**SMALL, rules=(TokenCascade("perplexity", band),))
    return SeaKR(backend, FakeRetriever(default=[TOWER]), config).answer(QUESTION), backend


def test_the_cascade_decides_outside_its_band_and_samples_inside_it():
    result, backend = answer((1.0, 1.05))  # below the step's perplexity: clearly unsure, retrieve without samples
    first = result.steps[0]
    perplexity = first.screen.value
    assert perplexity > 1.05 and first.reason == GateReason.UNSURE_FROM_TOKENS
    assert first.decision == "retrieve" and first.uncertainty.estimator == "none"
    assert not any("Tower is in Paris" in p for p in sampled(backend) if "Context:" not in p)

    result, backend = answer((1.0, perplexity + 1))  # around it: the samples decide, as the paper's gate
    assert result.steps[0].reason == GateReason.UNCERTAIN and result.steps[0].uncertainty.estimator == "eigenscore"
    assert len(sampled(backend)) >= 1

    result, _ = answer((perplexity + 1, perplexity + 2))  # above it: clearly sure, accepted without samples
    assert result.steps[0].reason == GateReason.SURE_FROM_TOKENS and result.steps[0].decision == "accept"


def test_without_a_band_every_step_is_sampled_and_its_reading_recorded():
    result, backend = answer(None)
    assert result.steps[0].reason == GateReason.UNCERTAIN and result.steps[0].screen.estimator == "perplexity"
    assert any("Tower is in Paris" not in p for p in sampled(backend))


def test_the_band_comes_from_the_profile_for_the_same_estimator():
    profile = DeltaProfile(
        "m", 1, "mlp", "eigenscore", 4, -1.0, "rate", cascade={"estimator": "min_token_prob", "band": [0.2, 0.8]}
    )
    config = SeaKRConfig(rules=(TokenCascade(), FinalMargin()))
    assert resolve_rules(profile, config) == (TokenCascade(band=(0.2, 0.8)), FinalMargin())
    given = SeaKRConfig(rules=(TokenCascade(band=(0.1, 0.3)),))
    assert resolve_rules(profile, given) == given.rules  # a band given wins
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        other = resolve_rules(profile, SeaKRConfig(rules=(TokenCascade("perplexity"),)))
    assert other == (TokenCascade("perplexity"),)
    assert any(issubclass(w.category, UncalibratedDeltaWarning) and "no cascade band" in str(w.message) for w in caught)
    assert resolve_rules(profile, config.with_(retrieve="always")) == config.rules  # no gate, nothing to fill in
