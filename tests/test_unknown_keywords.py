"""Every public class of both adapters (and ``SeaKRConfig``) refuses an unknown keyword argument and names the nearest
valid one: a mistyped setting (``SeaKRMiddleware(retriver=r)``) would otherwise be dropped and change what runs
without a word.

The test walks ``langchain_seakr.__all__`` and ``llamaindex_seakr.__all__``: each name is either built below with a
typo, or listed among the records, which users read rather than configure.  A new public class fails
``test_every_public_name_is_checked_or_a_record`` until it is one or the other.  Offline and fast: nothing here
loads a model (the embedders refuse the typo before loading theirs)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from fakes import ScriptedBackend
from llamaindex_fakes import NodeListRetriever, eiffel, make_nodes
from test_langchain_adapters import ListRetriever

import langchain_seakr as lc
import llamaindex_seakr as li
from seakr_integrations.keywords import accepted_keywords, check_keywords, unknown_keyword


def backend() -> ScriptedBackend:
    return ScriptedBackend(eiffel)


def li_llm() -> li.SeaKRLLM:
    return li.SeaKRLLM(backend=backend(), chat_template=False)


# (package, name): (build it with these keywords, a typo, the valid keyword the error must name)
TYPOS: dict[tuple[str, str], tuple[Callable[..., Any], str, str]] = {
    ("langchain", "AgentGate"): (lambda **kw: lc.AgentGate(llm=backend(), **kw), "retriver", "retriever"),
    ("langchain", "ChatSeaKR"): (lambda **kw: lc.ChatSeaKR(backend=backend(), **kw), "max_token", "max_tokens"),
    ("langchain", "MiniLMEmbeddings"): (lambda **kw: lc.MiniLMEmbeddings(**kw), "model_dri", "model_dir"),
    ("langchain", "PassageIndexRetriever"): (
        lambda **kw: lc.PassageIndexRetriever(index=ListIndex(), **kw),
        "kk",
        "k",
    ),
    ("langchain", "AgentLoop"): (
        lambda **kw: lc.AgentLoop(llm=backend(), retriever=ListRetriever(), **kw),
        "context_templat",
        "context_template",
    ),
    ("langchain", "SeaKRChain"): (
        lambda **kw: lc.SeaKRChain(retriever=ListRetriever(), llm=backend(), **kw),
        "return_traces",
        "return_trace",
    ),
    ("langchain", "SeaKRConfig"): (lambda **kw: lc.SeaKRConfig(**kw), "max_doc", "max_docs"),
    ("langchain", "SeaKRLLM"): (lambda **kw: lc.SeaKRLLM(backend=backend(), **kw), "temprature", "temperature"),
    ("langchain", "SeaKRMiddleware"): (lambda **kw: lc.SeaKRMiddleware(llm=backend(), **kw), "retriver", "retriever"),
    ("langchain", "SelfAwareReranker"): (lambda **kw: lc.SelfAwareReranker(llm=backend(), **kw), "topn", "top_n"),
    ("langchain", "UncertaintyGatedRetriever"): (
        lambda **kw: lc.UncertaintyGatedRetriever(retriever=ListRetriever(), llm=backend(), **kw),
        "search_timout",
        "search_timeout",
    ),
    ("langchain", "seakr_gate_tool"): (
        lambda **kw: lc.seakr_gate_tool(llm=backend(), **kw),
        "descripton",
        "description",
    ),
    ("llamaindex", "MiniLMEmbedding"): (lambda **kw: li.MiniLMEmbedding(**kw), "model_dri", "model_dir"),
    ("llamaindex", "PassageRetriever"): (lambda **kw: li.PassageRetriever(ListIndex(), **kw), "topk", "top_k"),
    ("llamaindex", "SeaKRConfig"): (lambda **kw: li.SeaKRConfig(**kw), "n_candidate", "n_candidates"),
    ("llamaindex", "SeaKRLLM"): (lambda **kw: li.SeaKRLLM(backend=backend(), **kw), "max_token", "max_tokens"),
    ("llamaindex", "SeaKRQueryEngine"): (
        lambda **kw: li.SeaKRQueryEngine(NodeListRetriever(make_nodes()), li_llm(), **kw),
        "on_retrieval_eror",
        "on_retrieval_error",
    ),
    ("llamaindex", "SeaKRWorkflow"): (
        lambda **kw: li.SeaKRWorkflow(NodeListRetriever(make_nodes()), li_llm(), **kw),
        "timout",
        "timeout",
    ),
    ("llamaindex", "seakr_search_tool"): (
        lambda **kw: li.seakr_search_tool(NodeListRetriever(make_nodes()), li_llm(), **kw),
        "search_timout",
        "search_timeout",
    ),
    ("llamaindex", "SelfAwareReranker"): (lambda **kw: li.SelfAwareReranker(li_llm(), **kw), "top_m", "top_n"),
    ("llamaindex", "UncertaintyGatedRetriever"): (
        lambda **kw: li.UncertaintyGatedRetriever(NodeListRetriever(make_nodes()), li_llm(), **kw),
        "always_retrive",
        "always_retrieve",
    ),
}

RECORDS = {
    "GateDecision": "the gate's decision, built by the adapters and read by users",
    "SeaKRAgentState": "a TypedDict: the agent state's schema",
    "AnswerChosenEvent": "an event the workflow streams",
    "KnowledgeGatheredEvent": "an event the agent's search tool streams",
    "GateDecidedEvent": "an instrumentation event the gate dispatches",
    "PassagesRerankedEvent": "an event the workflow streams",
    "PassagesRetrievedEvent": "an event the workflow streams",
    "QuestionAnsweredEvent": "the workflow's result",
    "QuestionFailedEvent": "an event the workflow streams",
    "SeaKRPhase": "the base of the workflow's events",
    "SeaKRPhaseEvent": "the base of the instrumentation events",
    "SeaKRQuestionEvent": "the workflow's start event (run(question=...))",
    "StepAssessedEvent": "an event the workflow streams",
    "StepFinishedEvent": "an event the workflow streams",
}


class ListIndex:
    """A core index of nothing (``search(query, k)``)."""

    def search(self, query: str, k: int = 3) -> list:
        return []


def test_every_public_name_is_checked_or_a_record():
    for package, module in (("langchain", lc), ("llamaindex", li)):
        for name in module.__all__:
            if name == "__version__":
                continue
            assert (package, name) in TYPOS or name in RECORDS, f"{module.__name__}.{name}: add it to TYPOS or RECORDS"


@pytest.mark.parametrize("key", list(TYPOS), ids=[f"{p}.{n}" for p, n in TYPOS])
def test_a_mistyped_keyword_is_refused_naming_the_nearest_one(key):
    make, typo, nearest = TYPOS[key]
    with pytest.raises(TypeError, match=rf"unexpected keyword argument '{typo}': did you mean '{nearest}'\?"):
        make(**{typo: 1})


@pytest.mark.parametrize(
    "make",
    [
        lambda: li.SeaKRQueryEngine(NodeListRetriever(make_nodes()), li_llm(), max_doc=3),
        lambda: lc.SeaKRChain(retriever=ListRetriever(), llm=backend(), max_doc=3),
        lambda: lc.SeaKRMiddleware(llm=backend(), max_doc=3),
    ],
    ids=["SeaKRQueryEngine", "SeaKRChain", "SeaKRMiddleware"],
)
def test_a_setting_of_the_config_given_to_a_component_says_where_it_goes(make):
    with pytest.raises(TypeError, match=r"'max_doc': 'max_docs' is a setting of SeaKRConfig; pass config="):
        make()


def test_the_valid_keywords_still_build():
    assert lc.SeaKRMiddleware(llm=backend(), retriever=ListRetriever()).settings.retriever is not None
    engine = li.SeaKRQueryEngine(NodeListRetriever(make_nodes()), li_llm(), lc.SeaKRConfig(max_docs=3))
    assert engine.config.max_docs == 3
    assert lc.ChatSeaKR(backend=backend(), model_name="scripted").model == "scripted"  # an alias is a keyword too


def test_the_helper_reads_signatures_fields_and_aliases():
    keywords = accepted_keywords(lc.ChatSeaKR)
    assert {"model", "model_name", "k", "callbacks"} <= keywords
    engine = accepted_keywords(li.SeaKRQueryEngine)
    assert {"retriever", "llm", "config", "search_timeout", "callback_manager"} <= engine
    assert {"verbose", "callback_manager", "search_timeout"} <= accepted_keywords(li.UncertaintyGatedRetriever)
    check_keywords("X", ["a"], ["a", "b"])
    error = unknown_keyword("X", "zzzz", ["alpha", "beta"])
    assert str(error) == "X got an unexpected keyword argument 'zzzz'; it takes: alpha, beta"
    assert "did you mean 'search_timeout'" in str(unknown_keyword("X", "timeout", ["search_timeout", "llm"]))
    assert "did you mean" not in str(unknown_keyword("SeaKRConfig", "check_claims", ["k", "rules"]))  # no guess


def test_a_setting_removed_with_the_rules_api_is_named_as_such():
    """An old results header's settings (``SeaKRConfig(**header["seakr"])``) are told they predate the rule objects,
    not "did you mean 'max_steps'?" for ``step_stop``."""
    from seakr_integrations.reasoning import SeaKRConfig

    with pytest.raises(TypeError, match=r"'step_stop': settings removed when the decision rules became objects") as e:
        SeaKRConfig(max_steps=3, step_stop="\n")
    assert "did you mean" not in str(e.value) and "run_settings(path)" in str(e.value)
