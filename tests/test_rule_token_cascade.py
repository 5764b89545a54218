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


def test_the_band_is_learned_with_delta_at_the_rule_s_agreement():
    from test_calibration import QUESTIONS, setup

    from seakr_integrations.evaluation.calibrate import calibrate_delta

    backend, retriever = setup()
    config = SeaKRConfig(k=4, num_exemplars=0, max_tokens=10, rules=(TokenCascade(agreement=0.95),))
    profile = calibrate_delta(backend, retriever, QUESTIONS, config, objective="rate", target_rate=0.5)
    learned = profile.rules["token-cascade"]  # the rule's learned state, by its name
    assert learned["estimator"] == "min_token_prob" and learned["agreement"] == 0.95
    assert 0.0 <= learned["decided"] <= 1.0 and learned["band"][0] <= learned["band"][1]
    (rule,) = resolve_rules(profile, config)
    assert rule == TokenCascade(band=tuple(learned["band"]), agreement=0.95)


def test_the_band_comes_from_the_profile_for_the_same_estimator():
    learned = {"token-cascade": {"estimator": "min_token_prob", "band": [0.2, 0.8]}}
    profile = DeltaProfile("m", 1, "mlp", "eigenscore", 4, -1.0, "rate", rules=learned)
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
