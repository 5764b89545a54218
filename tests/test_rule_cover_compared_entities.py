"""``CoverComparedEntities``: a question comparing two entities searches for each before it answers."""

from fakes import FakeRetriever, Reply, ScriptedBackend, passage
from rule_support import SMALL

from seakr_integrations.reasoning import SeaKR, SeaKRConfig
from seakr_integrations.reasoning.decisions import GateReason
from seakr_integrations.reasoning.rules import CoverComparedEntities

QUESTION = "Who was born first, Ada Lovelace or Alan Turing?"
ADA = passage("ada", "Ada Lovelace was born in 1815.", "Ada Lovelace")
ALAN = passage("alan", "Alan Turing was born in 1912.", "Alan Turing")


def test_a_compared_entity_gets_a_passage_before_the_answer():
    backend = ScriptedBackend(lambda p, c: Reply("So the answer is Ada Lovelace."))
    retriever = FakeRetriever(default=lambda q: [ALAN] if "Turing" in q else [ADA])
    result = SeaKR(backend, retriever, SeaKRConfig(**SMALL, rules=(CoverComparedEntities(),))).answer(QUESTION)
    assert [q for q, _ in retriever.queries] == ["Ada Lovelace born first", "Alan Turing born first"]
    assert {p.id for p in result.passages} == {"ada", "alan"}
    assert result.steps[0].reason == GateReason.UNCOVERED_ENTITY
    assert any("cover-compared-entities" in note for note in result.notes)


def test_the_paper_answers_at_once():
    backend = ScriptedBackend(lambda p, c: Reply("So the answer is Ada Lovelace."))
    retriever = FakeRetriever(default=[ADA])
    result = SeaKR(backend, retriever, SeaKRConfig.paper(**SMALL)).answer(QUESTION)
    assert retriever.queries == [] and result.answer == "Ada Lovelace"
