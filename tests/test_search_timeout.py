"""A slow or hung retriever: each search has a time limit (``SeaKRConfig.search_timeout``), after which it fails
like any retrieval error, recorded in the trace, without holding up the other questions."""

from __future__ import annotations

import threading
import time

import pytest
from fakes import ScriptedBackend, passage
from llamaindex_fakes import CONFIG, QUESTION, NodeListRetriever, eiffel
from test_langchain_adapters import ListRetriever

from langchain_seakr import ChatSeaKR, SeaKRChain
from llamaindex_seakr import SeaKRLLM, SeaKRQueryEngine
from seakr_integrations.cli import build_parser
from seakr_integrations.cli.common import seakr_config
from seakr_integrations.evaluation.results import config_fingerprint
from seakr_integrations.reasoning import RetrievalError, SeaKR, SeaKRConfig

LIMIT = CONFIG.with_(search_timeout=0.3)


class HangingRetriever:
    """Hangs on its first ``hang`` searches (until released) and answers the others at once."""

    def __init__(self, hang: int = 1_000) -> None:
        self.left = hang
        self.lock = threading.Lock()
        self.release = threading.Event()

    def search(self, query, k=3):
        with self.lock:
            hang, self.left = self.left > 0, self.left - 1
        if hang:
            self.release.wait(30)
        return [passage(f"p{i}") for i in (1, 2, 3)]


def test_a_hung_search_fails_after_the_time_limit_with_a_clear_error():
    retriever = HangingRetriever()
    started = time.monotonic()
    try:
        with pytest.raises(RetrievalError, match=r"took longer than search_timeout=0.3 s"):
            SeaKR(ScriptedBackend(eiffel), retriever, LIMIT).answer(QUESTION)
        assert time.monotonic() - started < 10
    finally:
        retriever.release.set()


def test_answer_without_records_the_timeout_and_the_other_questions_go_on():
    retriever = HangingRetriever(hang=1)  # the first search hangs; the other question's searches answer at once
    config = LIMIT.with_(on_retrieval_error="answer_without")
    try:
        results = SeaKR(ScriptedBackend(eiffel), retriever, config).answer_many([QUESTION, "Who wrote Hamlet?"])
    finally:
        retriever.release.set()
    assert all(r.answer for r in results)
    timed_out = [any("search_timeout" in note for note in r.notes) for r in results]
    assert sorted(timed_out) == [False, True]
    assert results[timed_out.index(False)].passages  # the other question searched and kept a passage


def test_a_search_within_the_limit_is_untouched():
    slow = HangingRetriever()
    threading.Timer(0.1, slow.release.set).start()
    result = SeaKR(ScriptedBackend(eiffel), slow, CONFIG.with_(search_timeout=5.0)).answer(QUESTION)
    assert result.passages and not any("search_timeout" in note for note in result.notes)


class HangingDocs(ListRetriever):
    def _get_relevant_documents(self, query, *, run_manager, k=3):
        time.sleep(2)
        return super()._get_relevant_documents(query, run_manager=run_manager, k=k)


class HangingNodes(NodeListRetriever):
    def _retrieve(self, query_bundle):
        time.sleep(2)
        return super()._retrieve(query_bundle)


def test_both_adapters_apply_the_time_limit():
    chain = SeaKRChain(retriever=HangingDocs(), llm=ChatSeaKR(backend=ScriptedBackend(eiffel)), config=LIMIT)
    with pytest.raises(RetrievalError, match="search_timeout"):
        chain.invoke(QUESTION)
    engine = SeaKRQueryEngine(HangingNodes(), SeaKRLLM(backend=ScriptedBackend(eiffel)), LIMIT)
    with pytest.raises(RetrievalError, match="search_timeout"):
        engine.query(QUESTION)


def test_the_setting_is_validated_set_by_the_cli_and_ignored_by_results_files():
    for bad in (0, -1, float("nan"), "soon", True):
        with pytest.raises(ValueError, match="search_timeout"):
            SeaKRConfig(search_timeout=bad)
    assert SeaKRConfig(search_timeout=None).search_timeout is None
    args = build_parser().parse_args(["ask", "What?", "--search-timeout", "7.5"])
    assert seakr_config(args).search_timeout == 7.5
    args = build_parser().parse_args(["ask", "What?", "--search-timeout", "0"])
    assert seakr_config(args).search_timeout is None
    one, other = SeaKRConfig(search_timeout=1.0).to_dict(), SeaKRConfig(search_timeout=None).to_dict()
    assert config_fingerprint({"seakr": one}) == config_fingerprint({"seakr": other})
    assert config_fingerprint({"seakr": one}) != config_fingerprint({"seakr": SeaKRConfig(k=4).to_dict()})
