"""``AcceptCoveredSteps``: a step whose names the kept passages all cover is accepted without samples; one naming
nothing is left to the samples."""

from fakes import FakeRetriever, Reply, ScriptedBackend, passage
from rule_support import QUESTION, SMALL, is_step

from seakr_integrations.reasoning import SeaKR, SeaKRConfig
from seakr_integrations.reasoning.decisions import GateReason
from seakr_integrations.reasoning.rules import AcceptCoveredSteps, ClaimCheck, SearchQuestionFirst

TOWER = passage("p1", "The Eiffel Tower is in Paris, France.", "Eiffel Tower")


def stepping(first_step: str):
    def respond(prompt, config):
        if not is_step(config):
            return Reply("So the answer is France")
        if "Answer: " + first_step.strip() in prompt:
            return Reply("So the answer is France.")
        return Reply(first_step, spread=1.0)  # uncertain by its samples

    return respond


def sampled_steps(backend: ScriptedBackend) -> list[str]:
    return [p for batch in backend.batches for p, c in batch if c.k > 0 and is_step(c)]


def answer(first_step: str, rules):
    backend = ScriptedBackend(stepping(first_step))
    config = SeaKRConfig(**SMALL, rules=(SearchQuestionFirst(), *rules))
    return SeaKR(backend, FakeRetriever(default=[TOWER]), config).answer(QUESTION), backend


def test_a_step_restating_a_kept_passage_is_accepted_without_samples():
    result, backend = answer("The Eiffel Tower is in Paris.", (ClaimCheck(backing="mention"), AcceptCoveredSteps()))
    step = result.steps[1]
    assert step.reason == GateReason.SUPPORTED_CLAIM and step.decision == "accept"
    assert sampled_steps(backend) == [] and result.answer == "France"
    assert {"rule": "accept-covered-steps", "round": 2, "what": "supported_claim"} in result.rules_applied


def test_without_it_the_samples_decide():
    result, backend = answer("The Eiffel Tower is in Paris.", (ClaimCheck(backing="mention"),))
    assert result.steps[1].reason == GateReason.UNCERTAIN and sampled_steps(backend)


def test_a_step_naming_nothing_or_something_uncovered_is_not_its_to_accept():
    result, backend = answer("it is tall.", (AcceptCoveredSteps(),))
    assert result.steps[1].reason == GateReason.UNCERTAIN and sampled_steps(backend)
    result, _ = answer("The Eiffel Tower is in Lyon.", (ClaimCheck(backing="mention"), AcceptCoveredSteps()))
    assert result.steps[1].reason == GateReason.UNSUPPORTED_CLAIM
