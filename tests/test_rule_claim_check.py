"""``ClaimCheck``: a step naming what no kept passage covers retrieves without samples, and the passage kept from
the search covers what the step or the question lacks; the entity finder is swappable."""

from dataclasses import dataclass
from typing import ClassVar

from fakes import FakeRetriever, Reply, ScriptedBackend, passage
from rule_support import QUESTION, SMALL, TOWER, is_step

from seakr_integrations.reasoning import SeaKR, SeaKRConfig
from seakr_integrations.reasoning.decisions import GateDecision, GateReason
from seakr_integrations.reasoning.rules import ClaimCheck, KeepFirstResult


def lyon_then_paris(prompt, config):
    if not is_step(config):
        return Reply("So the answer is France.")
    if "Context:" in prompt and "Answer: The Eiffel Tower" not in prompt:
        return Reply("The Eiffel Tower is in Paris.")  # after the passage: now covered
    if "Answer: The Eiffel Tower" in prompt:
        return Reply("So the answer is France.")
    return Reply("The Eiffel Tower is in Lyon.")  # confident (spread 0), but nothing covers it yet


def test_a_claim_about_an_entity_no_passage_covers_retrieves_without_samples():
    backend = ScriptedBackend(lyon_then_paris)
    result = SeaKR(backend, FakeRetriever(default=[TOWER]), SeaKRConfig(**SMALL, rules=(ClaimCheck(),))).answer(
        QUESTION
    )
    assert result.steps[0].reason == GateReason.UNSUPPORTED_CLAIM and result.steps[0].decision == "retrieve"
    assert result.passages == [TOWER] and result.answer == "France"
    assert result.rules_applied[0] == {"rule": "claim-check", "round": 1, "what": "unsupported_claim"}
    first_step_calls = [c for batch in backend.batches for p, c in batch if is_step(c) and "Context:" not in p]
    assert first_step_calls and all(c.k == 0 for c in first_step_calls)


def test_without_it_the_gate_trusts_a_confident_claim():
    backend = ScriptedBackend(lyon_then_paris)
    config = SeaKRConfig(**{**SMALL, "delta": 100.0}, rules=())
    result = SeaKR(backend, FakeRetriever(default=[TOWER]), config).answer(QUESTION)
    assert result.steps[0].reason == GateReason.CONFIDENT and result.passages == []


def test_the_kept_passage_covers_what_the_step_claimed_when_a_result_does():
    def respond(prompt, config):
        if not is_step(config) or "Context:" in prompt:
            return Reply("So the answer is France.")
        return Reply("The Eiffel Tower was built by Gustave Eiffel.")

    other = passage("p0", "A tower is a tall structure.", "Tower")
    eiffel = passage("p1", "Gustave Eiffel's company built the Eiffel Tower.", "Gustave Eiffel")
    retriever = FakeRetriever(default=[other, eiffel])
    result = SeaKR(ScriptedBackend(respond), retriever, SeaKRConfig(**SMALL, rules=(ClaimCheck(),))).answer(QUESTION)
    assert result.steps[0].reason == GateReason.UNSUPPORTED_CLAIM and [p.id for p in result.passages] == ["p1"]
    first_only = SeaKRConfig(**{**SMALL, "delta": -100.0}, rules=(KeepFirstResult(),))  # the search order alone
    result = SeaKR(ScriptedBackend(respond), FakeRetriever(default=[other, eiffel]), first_only).answer(QUESTION)
    assert [p.id for p in result.passages][:1] == ["p0"]


def test_the_standalone_gate_reports_the_stage_that_decided():
    backend = ScriptedBackend(lambda p, c: Reply("The Eiffel Tower is in Paris."))
    seakr = SeaKR(backend, None, SeaKRConfig(**SMALL, rules=(ClaimCheck(),)))
    decision = GateDecision.from_assessment(seakr.assess(QUESTION), seakr.config)
    assert decision.retrieve and decision.reason is GateReason.UNSUPPORTED_CLAIM
    assert "no kept passage" in decision.explanation


@dataclass(frozen=True)
class LowerCaseNames:
    """An entity finder for a domain whose names are lower case (here: the words after "compound")."""

    name: ClassVar[str] = "compounds"

    def names(self, text):
        words = text.rstrip(".").split()
        return [words[i + 1] for i, w in enumerate(words[:-1]) if w == "compound"]

    def compared(self, question):
        return []

    def options(self, question):
        return []


def test_another_entity_finder_decides_in_its_own_terms():
    def respond(prompt, config):
        if not is_step(config) or "Context:" in prompt:
            return Reply("So the answer is yes.")
        return Reply("the compound benzaldehyde smells of almonds.")

    almond = passage("b", "benzaldehyde smells of bitter almonds.", "benzaldehyde")
    config = SeaKRConfig(**{**SMALL, "delta": 100.0}, rules=(ClaimCheck(entities=LowerCaseNames()),))
    result = SeaKR(ScriptedBackend(respond), FakeRetriever(default=[almond]), config).answer("Does it smell?")
    assert result.steps[0].reason == GateReason.UNSUPPORTED_CLAIM and result.passages == [almond]
    english = SeaKRConfig(**{**SMALL, "delta": 100.0}, rules=(ClaimCheck(),))  # no capitals: no names
    result = SeaKR(ScriptedBackend(respond), FakeRetriever(default=[almond]), english).answer("Does it smell?")
    assert result.steps[0].reason == GateReason.CONFIDENT
    recorded = {"rule": "claim-check", "entities": "compounds", "query": "entity", "backing": "page"}
    assert ClaimCheck(entities=LowerCaseNames()).to_dict() == recorded
