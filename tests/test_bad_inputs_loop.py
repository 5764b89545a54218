"""Inputs that used to slip through the loop: a question with no words, a query SeaKR built from nothing, and a
retriever that returns ``None``; each is a clear error (or a recorded fallback), in the core and both adapters."""

from __future__ import annotations

import pytest
from fakes import FakeRetriever, ScriptedBackend, passage
from llama_index.core.schema import QueryBundle
from llamaindex_fakes import CONFIG, QUESTION, NodeListRetriever, eiffel
from test_langchain_adapters import ListRetriever

from langchain_seakr import ChatSeaKR, SeaKRChain
from llamaindex_seakr import SeaKRLLM, SeaKRQueryEngine
from seakr_integrations.outputs import Continuation
from seakr_integrations.reasoning import RetrievalError, SeaKR
from seakr_integrations.reasoning.query import build_query

NO_WORDS = ["???", "  ...  ", "!?", "—"]


@pytest.mark.parametrize("question", NO_WORDS)
def test_a_question_with_no_words_is_refused_up_front(question):
    backend = ScriptedBackend(eiffel)
    with pytest.raises(ValueError, match="has no words"):
        SeaKR(backend, FakeRetriever(default=[passage("p1")]), CONFIG).answer_many([QUESTION, question])
    assert backend.prompts == []  # refused before any model call
    with pytest.raises(ValueError, match="has no words"):
        SeaKRChain(retriever=ListRetriever(), llm=ChatSeaKR(backend=ScriptedBackend(eiffel)), config=CONFIG).invoke(
            question
        )
    with pytest.raises(ValueError, match="has no words"):
        SeaKRQueryEngine(NodeListRetriever(), SeaKRLLM(backend=ScriptedBackend(eiffel)), CONFIG).query(question)


def test_a_query_built_from_nothing_falls_back_to_the_question():
    empty_step = Continuation(text="", token_ids=[], logprobs=[], finish_reason="stop")
    built = build_query(empty_step, "Where is it?", None, lambda ids: "", lambda text: [1] * len(text.split()))
    assert built.text and built.fallback
    punctuation = Continuation(text="... ?", token_ids=[1, 2], logprobs=[-5.0, -5.0], finish_reason="stop")
    built = build_query(punctuation, "??", None, lambda ids: "...", lambda text: [1])
    assert built.text == "??" and built.fallback  # never an empty query, even from a question of punctuation


class NoneRetriever:
    def search(self, query, k=3):
        return None


def test_a_retriever_that_returns_none_is_named_with_what_it_must_return():
    with pytest.raises(RetrievalError, match=r"NoneRetriever returned NoneType .* must return a list of Passage"):
        SeaKR(ScriptedBackend(eiffel), NoneRetriever(), CONFIG).answer(QUESTION)
    seakr = SeaKR(ScriptedBackend(eiffel), NoneRetriever(), CONFIG, on_retrieval_error="answer_without")
    result = seakr.answer(QUESTION)
    assert result.answer and any("NoneRetriever returned NoneType" in note for note in result.notes)


class NoneNodes(NodeListRetriever):
    def _retrieve(self, query_bundle: QueryBundle):
        return None


def test_a_llamaindex_retriever_that_returns_none_is_named():
    engine = SeaKRQueryEngine(NoneNodes(), SeaKRLLM(backend=ScriptedBackend(eiffel)), CONFIG)
    with pytest.raises(RetrievalError, match=r"NoneNodes failed with TypeError .* must return a list of NodeWithScore"):
        engine.query(QUESTION)


def test_the_cli_refuses_wordless_questions_and_bad_thresholds_before_loading_a_model(capsys, monkeypatch):
    from seakr_integrations import cli

    def no_model(args):
        raise AssertionError("the model was loaded for an input that should be refused first")

    monkeypatch.setattr("seakr_integrations.cli.backend.build_backend", no_model)
    for argv, message in (
        (["ask", "???"], "has no words"),
        (["ask", "Who wrote Hamlet?", "--delta", "nan"], "delta=nan: must be a finite number"),
        (["ask", "Who wrote Hamlet?", "--search-timeout", "-1"], "--search-timeout -1: give seconds > 0, or 0 to"),
    ):
        assert cli.main(argv) == 2
        assert message in capsys.readouterr().err


@pytest.mark.parametrize("delta", [float("nan"), float("inf"), "high", True])
def test_non_numeric_thresholds_are_refused_in_both_adapters(delta):
    from seakr_integrations.reasoning import SeaKRConfig

    with pytest.raises(ValueError, match="delta="):
        SeaKRChain(retriever=ListRetriever(), llm=ChatSeaKR(backend=ScriptedBackend(eiffel)), config={"delta": delta})
    with pytest.raises(ValueError, match="delta="):
        SeaKRLLM(backend=ScriptedBackend(eiffel)).loop_config(SeaKRConfig(delta=delta))
    with pytest.raises(ValueError, match="delta="):
        SeaKRConfig(delta=delta)
