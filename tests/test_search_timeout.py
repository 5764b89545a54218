"""A slow or hung retriever: each search has a time limit (``search_timeout``, an argument of ``SeaKR`` and of the
adapters), after which it fails like any retrieval error, recorded in the trace, without holding up the other
questions."""

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
from seakr_integrations.cli.retriever_options import search_settings
from seakr_integrations.evaluation.methods import make_method
from seakr_integrations.evaluation.results import config_fingerprint
from seakr_integrations.reasoning import RetrievalError, SeaKR, SeaKRConfig
from seakr_integrations.reasoning.calls import DEFAULT_SEARCH_TIMEOUT

LIMIT = {"search_timeout": 0.3}


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
            SeaKR(ScriptedBackend(eiffel), retriever, CONFIG, **LIMIT).answer(QUESTION)
        assert time.monotonic() - started < 10
    finally:
        retriever.release.set()


def test_answer_without_records_the_timeout_and_the_other_questions_go_on():
    retriever = HangingRetriever(hang=1)  # the first search hangs; the other question's searches answer at once
    seakr = SeaKR(ScriptedBackend(eiffel), retriever, CONFIG, **LIMIT, on_retrieval_error="answer_without")
    try:
        results = seakr.answer_many([QUESTION, "Who wrote Hamlet?"])
    finally:
        retriever.release.set()
    assert all(r.answer for r in results)
    timed_out = [any("search_timeout" in note for note in r.notes) for r in results]
    assert sorted(timed_out) == [False, True]
    assert results[timed_out.index(False)].passages  # the other question searched and kept a passage


def test_a_search_within_the_limit_is_untouched():
    slow = HangingRetriever()
    threading.Timer(0.1, slow.release.set).start()
    result = SeaKR(ScriptedBackend(eiffel), slow, CONFIG, search_timeout=5.0).answer(QUESTION)
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
    chain = SeaKRChain(retriever=HangingDocs(), llm=ChatSeaKR(backend=ScriptedBackend(eiffel)), config=CONFIG, **LIMIT)
    with pytest.raises(RetrievalError, match="search_timeout"):
        chain.invoke(QUESTION)
    engine = SeaKRQueryEngine(HangingNodes(), SeaKRLLM(backend=ScriptedBackend(eiffel)), CONFIG, **LIMIT)
    with pytest.raises(RetrievalError, match="search_timeout"):
        engine.query(QUESTION)


def test_the_setting_is_validated_set_by_the_cli_and_ignored_by_results_files():
    backend, chat = ScriptedBackend(eiffel), ChatSeaKR(backend=ScriptedBackend(eiffel))
    for bad in (0, -1, float("nan"), "soon", True):
        with pytest.raises(ValueError, match="search_timeout"):
            SeaKR(backend, None, CONFIG, search_timeout=bad)
        with pytest.raises(ValueError, match="search_timeout"):
            SeaKRQueryEngine(NodeListRetriever(), SeaKRLLM(backend=backend), CONFIG, search_timeout=bad)
        if bad is not True:  # see test_the_langchain_adapter_refuses_a_boolean_time_limit
            with pytest.raises(ValueError, match="search_timeout"):
                SeaKRChain(retriever=ListRetriever(), llm=chat, config=CONFIG, search_timeout=bad)
    assert SeaKR(backend, None, CONFIG, search_timeout=None).calls.search_timeout is None
    assert SeaKR(backend, None, CONFIG).calls.search_timeout == DEFAULT_SEARCH_TIMEOUT == 120.0
    args = build_parser().parse_args(["ask", "What?", "--search-timeout", "7.5"])
    assert search_settings(args) == {"search_timeout": 7.5}
    args = build_parser().parse_args(["ask", "What?", "--search-timeout", "0"])
    assert search_settings(args) == {"search_timeout": None}
    assert search_settings(build_parser().parse_args(["ask", "What?"])) == {"search_timeout": DEFAULT_SEARCH_TIMEOUT}
    # how long to wait is not what is computed: results files and their fingerprints never see it
    # and given to the config, the error says which components take it
    where = r"'search_timeout': it is a setting of the component that searches.*SeaKR\(backend, retriever, config, "
    with pytest.raises(TypeError, match=where + r"search_timeout=\.\.\.\).*--search-timeout"):
        SeaKRConfig(search_timeout=1.0)
    with pytest.raises(TypeError, match=r"'on_retrieval_error': it is a setting of the component that searches"):
        SeaKRConfig(on_retrieval_error="answer_without")
    one, other, more = (
        make_method("seakr", backend, None, config, search_timeout=timeout).describe()
        for config, timeout in ((CONFIG, 1.0), (CONFIG, None), (CONFIG.with_(k=CONFIG.k + 2), 1.0))
    )
    assert not any("timeout" in name for name in one["seakr"])
    assert config_fingerprint(one) == config_fingerprint(other) != config_fingerprint(more)


def test_the_langchain_adapter_refuses_a_boolean_time_limit():
    chat = ChatSeaKR(backend=ScriptedBackend(eiffel))
    with pytest.raises(ValueError, match="search_timeout"):
        SeaKRChain(retriever=ListRetriever(), llm=chat, config=CONFIG, search_timeout=True)
