"""One bad question costs only its own slot (issue 49): ``SeaKRChain.batch(..., return_exceptions=True)``,
``answer_many(return_exceptions=True)`` and ``iter_answers`` answer the valid questions and put the error, which
names the question's own place in the batch, where the bad one was."""

from __future__ import annotations

import pytest
from fakes import FakeRetriever, ScriptedBackend, passage
from llamaindex_fakes import CONFIG, QUESTION, eiffel
from test_langchain_adapters import ListRetriever

from langchain_seakr import ChatSeaKR, SeaKRChain
from seakr_integrations.reasoning import QuestionFailed, SeaKR, SeaKRResult

BATCH = [QUESTION, "Who wrote Hamlet?", "?????", QUESTION, "   "]


def seakr() -> SeaKR:
    return SeaKR(ScriptedBackend(eiffel), FakeRetriever(default=[passage("p1")]), CONFIG)


def test_answer_many_puts_each_bad_questions_error_in_its_own_place():
    results = seakr().answer_many(BATCH, return_exceptions=True)
    assert [type(r).__name__ for r in results] == ["SeaKRResult"] * 2 + ["ValueError", "SeaKRResult", "ValueError"]
    assert str(results[2]).startswith("question 2 ('?????') has no words")
    assert str(results[4]).startswith("question 4 is empty")
    assert all(r.answer for r in results if isinstance(r, SeaKRResult))


def test_iter_answers_yields_a_per_question_error_and_answers_the_rest():
    got = dict(seakr().iter_answers(BATCH))
    assert sorted(got) == list(range(len(BATCH)))
    assert isinstance(got[2], ValueError) and "question 2" in str(got[2])
    assert isinstance(got[4], ValueError) and "question 4" in str(got[4])
    assert all(isinstance(got[i], SeaKRResult) and got[i].answer for i in (0, 1, 3))
    failed = [e for e in seakr().iter_events(BATCH, return_exceptions=True) if isinstance(e, QuestionFailed)]
    assert [(e.question_index, e.question) for e in failed] == [(2, "?????"), (4, "   ")]


def test_without_return_exceptions_the_bad_question_is_refused_up_front_with_its_index():
    backend = ScriptedBackend(eiffel)
    with pytest.raises(ValueError, match=r"^question 2 \('\?\?\?\?\?'\) has no words"):
        SeaKR(backend, FakeRetriever(default=[passage("p1")]), CONFIG).answer_many(BATCH)
    assert backend.prompts == []  # before any model call
    with pytest.raises(ValueError, match="questions must be a list"):
        seakr().answer_many(QUESTION, return_exceptions=True)


def chain() -> SeaKRChain:
    return SeaKRChain(retriever=ListRetriever(), llm=ChatSeaKR(backend=ScriptedBackend(eiffel)), config=CONFIG)


def test_chain_batch_fails_only_the_bad_slot_with_its_own_index():
    inputs = [QUESTION, "Who wrote Hamlet?", "?????", {"question": QUESTION}, {"nothing": 1}]
    outputs = chain().batch(inputs, return_exceptions=True)
    assert [isinstance(o, Exception) for o in outputs] == [False, False, True, False, True]
    assert all(isinstance(o, str) and o for o in (outputs[0], outputs[1], outputs[3]))
    assert str(outputs[2]).startswith("question 2 ('?????') has no words")
    assert "dict without a question" in str(outputs[4])


def test_chain_batch_without_return_exceptions_raises_the_bad_questions_error():
    with pytest.raises(ValueError, match=r"question 1 \('\?\?\?\?\?'\) has no words"):
        chain().batch([QUESTION, "?????"])
