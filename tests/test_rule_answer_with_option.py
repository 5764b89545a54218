"""``AnswerWithOption``: a question closing on two options gets one of them."""

from fakes import FakeRetriever, Reply, ScriptedBackend, passage
from rule_support import SMALL

from seakr_integrations.reasoning import SeaKR, SeaKRConfig
from seakr_integrations.reasoning.entities import option_answer
from seakr_integrations.reasoning.rules import AnswerWithOption

QUESTION = "Which film has the director who died earlier, Santa And The Fairy Snow Queen or Hearts In Bondage?"
BONDAGE = passage("hb", "Hearts in Bondage is a 1936 film directed by Lew Ayres.", "Hearts in Bondage")
SANTA = passage("s", "Santa and the Fairy Snow Queen is a 1951 film.", "Santa and the Fairy Snow Queen")


def test_an_answer_naming_neither_option_gives_the_option_its_passage_leads_to():
    retriever = FakeRetriever(default=lambda q: [SANTA] if "Santa" in q else [BONDAGE])
    backend = ScriptedBackend(lambda p, c: Reply("So the answer is Lew Ayres."))
    result = SeaKR(backend, retriever, SeaKRConfig(**SMALL)).answer(QUESTION)
    assert result.answer == "Hearts In Bondage"
    assert any("answer-with-option" in note for note in result.notes)
    assert {"rule": "answer-with-option", "round": None, "what": "answer"} in result.rules_applied
    assert "rule: answer-with-option (final answer: answer)" in result.format()
    assert result.finals[result.strategy].answer == "Lew Ayres"  # the final answer as generated stays in the trace
    without = SeaKRConfig(**SMALL, rules="default,-answer-with-option")
    assert SeaKR(backend, retriever, without).answer(QUESTION).answer == "Lew Ayres"


def test_option_answer():
    options = ["X", "Hearts In Bondage"]
    assert option_answer(options, "Lew Ayres", [BONDAGE]) == "Hearts In Bondage"
    assert option_answer(options, "X", [BONDAGE]) == "X"  # names an option already
    assert option_answer(options, "yes", [BONDAGE]) == "yes"
    assert option_answer([], "Lew Ayres", [BONDAGE]) == "Lew Ayres"
    assert option_answer(options, "Someone", [], ["the film X"]) == "X"  # the other final answer names one
    assert AnswerWithOption().to_dict() == {"rule": "answer-with-option", "entities": "english"}


def test_every_baseline_shares_the_answer_step():
    """The option choice is part of the answer step every method shares, so a lead over a baseline measures retrieval
    and reasoning, not how an answer is worded."""
    from seakr_integrations.evaluation.methods import make_method

    retriever = FakeRetriever(default=[BONDAGE, SANTA])
    for name in ("single-retrieval", "cot", "ircot", "flare"):
        backend = ScriptedBackend(lambda p, c: Reply("So the answer is Lew Ayres."))
        (answer,) = make_method(name, backend, retriever, SeaKRConfig(**SMALL)).answer_many([QUESTION])
        if name in ("cot", "flare"):  # no passage kept (FLARE is sure here), and no other answer to read one from
            assert answer.prediction == "Lew Ayres"
            continue
        assert answer.prediction == "Hearts In Bondage", name
        assert {"rule": "answer-with-option", "round": None, "what": "answer"} in answer.trace["rules_applied"]
        without = SeaKRConfig(**SMALL, rules="default,-answer-with-option")
        (answer,) = make_method(name, backend, retriever, without).answer_many([QUESTION])
        assert answer.prediction == "Lew Ayres", name
