"""The adapters' catalog of bad inputs, as a new user meets them: every path that searches keeps ``search_timeout``
and ``on_retrieval_error`` (the agent middleware and both gated retrievers, as ``SeaKRChain`` does), a failing
retriever is named, a retriever tool returning ``None`` is an error (not the passage ``'null'``), a state without
messages and a ``context_template`` with stray braces say what is wrong, and settings that contradict each other,
or that a component would ignore, are refused where they are given.

Offline and fast: the scripted back-end of ``fakes.py`` (the Eiffel script: its first step is unsure, so the gates
search)."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest
from fakes import ScriptedBackend
from langchain.agents import create_agent
from langchain_core.documents import Document
from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from llamaindex_fakes import NodeListRetriever, eiffel
from test_langchain_adapters import ListRetriever
from test_langchain_agent import agent_with, chat
from test_reasoner import CONFIG

from langchain_seakr import AgentGate, ChatSeaKR, SeaKRMiddleware, SelfAwareReranker, seakr_gate_tool
from langchain_seakr import UncertaintyGatedRetriever as LangChainGate
from llamaindex_seakr import SeaKRLLM as LlamaIndexLLM
from llamaindex_seakr import SelfAwareReranker as LlamaIndexReranker
from llamaindex_seakr import UncertaintyGatedRetriever as LlamaIndexGate
from seakr_integrations.reasoning import RetrievalError

QUESTION = "Which country is the Eiffel Tower in?"
LIMIT = 0.3


def unsure() -> ScriptedBackend:
    return ScriptedBackend(eiffel)


class Hanging(ListRetriever):
    """A LangChain retriever that never answers (until released)."""

    release: Any = None

    def _get_relevant_documents(self, query: str, *, run_manager: Any, k: int = 3) -> list[Document]:
        self.release.wait(30)
        return super()._get_relevant_documents(query, run_manager=run_manager, k=k)


class HangingNodes(NodeListRetriever):
    """A LlamaIndex retriever that never answers (until released), in both of its forms."""

    def __init__(self) -> None:
        super().__init__()
        self.release = threading.Event()

    def _retrieve(self, query_bundle):
        self.release.wait(30)
        return super()._retrieve(query_bundle)

    async def _aretrieve(self, query_bundle):
        await asyncio.sleep(30)
        return super()._retrieve(query_bundle)


class ReturnsNone(ListRetriever):
    def _get_relevant_documents(self, query: str, *, run_manager: Any, k: int = 3) -> Any:
        return None


@pytest.fixture
def hanging():
    retriever = Hanging(queries=[], release=threading.Event())
    yield retriever
    retriever.release.set()


# ------------------------------------------------------------------------------------------- search_timeout
def test_the_middleware_gives_up_on_a_hung_retriever_at_search_timeout(hanging):
    for one_shot, said in ((True, r"the retriever Hanging failed .*"), (False, r"query 'Eiffel Tower stands'.*")):
        middleware = SeaKRMiddleware(
            llm=unsure(), config=CONFIG, retriever=hanging, search_timeout=LIMIT, one_shot=one_shot
        )
        agent = create_agent(chat(AIMessage("France")), middleware=[middleware])
        started = time.monotonic()
        with pytest.raises(RetrievalError, match=said + r"search_timeout=0\.3 s"):
            agent.invoke({"messages": [("user", QUESTION)]})
        assert time.monotonic() - started < 10


def test_the_middleware_answers_without_a_hung_search_when_told_to(hanging):
    settings = {"search_timeout": LIMIT, "on_retrieval_error": "answer_without"}
    middleware = SeaKRMiddleware(llm=unsure(), config=CONFIG, retriever=hanging, one_shot=True, **settings)
    model = chat(AIMessage("France"))
    state = create_agent(model, middleware=[middleware]).invoke({"messages": [("user", QUESTION)]})
    assert state["messages"][-1].content == "France" and state["seakr_passages"] == []
    assert "search_timeout=0.3" in state["seakr_decision"]["error"]
    assert "the search failed" in state["seakr_decision"]["explanation"]
    loop = SeaKRMiddleware(llm=unsure(), config=CONFIG, retriever=hanging, **settings)
    state = create_agent(chat(AIMessage("France")), middleware=[loop]).invoke({"messages": [("user", QUESTION)]})
    assert state["messages"][-1].content == "France" and state["seakr_passages"] == []
    gathered = state["seakr_gathered"]
    assert gathered["stop_reason"] == "retrieval error" and "search_timeout=0.3" in " ".join(gathered["notes"])


def test_the_langchain_gate_gives_up_at_search_timeout(hanging):
    gate = LangChainGate(retriever=hanging, llm=unsure(), config=CONFIG, search_timeout=LIMIT)
    with pytest.raises(RetrievalError, match=r"wrapped retriever Hanging failed .*search_timeout=0\.3 s"):
        gate.invoke(QUESTION)
    tolerant = LangChainGate(
        retriever=hanging, llm=unsure(), config=CONFIG, search_timeout=LIMIT, on_retrieval_error="answer_without"
    )
    assert tolerant.invoke(QUESTION) == [] and "search_timeout=0.3" in tolerant.last_decision.error


def test_the_llamaindex_gate_gives_up_at_search_timeout_sync_and_async():
    retriever = HangingNodes()
    llm = LlamaIndexLLM(backend=unsure(), chat_template=False)
    try:
        gate = LlamaIndexGate(retriever, llm, CONFIG, search_timeout=LIMIT)
        with pytest.raises(RetrievalError, match=r"HangingNodes failed .*search_timeout=0\.3 s"):
            gate.retrieve(QUESTION)
        with pytest.raises(RetrievalError, match=r"HangingNodes failed .*search_timeout=0\.3 s"):
            asyncio.run(gate.aretrieve(QUESTION))
        tolerant = LlamaIndexGate(retriever, llm, CONFIG, search_timeout=LIMIT, on_retrieval_error="answer_without")
        assert asyncio.run(tolerant.aretrieve(QUESTION)) == []
        assert "search_timeout=0.3" in tolerant.last_decision.error
    finally:
        retriever.release.set()


def test_a_search_within_the_limit_is_untouched():
    gate = LlamaIndexGate(NodeListRetriever(), LlamaIndexLLM(backend=unsure(), chat_template=False), CONFIG)
    nodes = gate.retrieve(QUESTION)
    assert len(nodes) == 3 and gate.last_decision.error is None


# ----------------------------------------------------------------------------------------- a failing retriever
def test_the_middleware_names_a_retriever_that_raises_or_returns_none():
    failing = SeaKRMiddleware(
        llm=unsure(), config=CONFIG, retriever=ListRetriever(queries=[], fail=True), one_shot=True
    )
    with pytest.raises(RetrievalError, match=r"the retriever ListRetriever failed .*ConnectionError: search service"):
        create_agent(chat(AIMessage("x")), middleware=[failing]).invoke({"messages": [("user", QUESTION)]})
    empty = SeaKRMiddleware(llm=unsure(), config=CONFIG, retriever=ReturnsNone(queries=[]), one_shot=True)
    with pytest.raises(RetrievalError, match=r"the retriever ReturnsNone failed .*returned NoneType; a retriever must"):
        create_agent(chat(AIMessage("x")), middleware=[empty]).invoke({"messages": [("user", QUESTION)]})


def test_a_retriever_tool_returning_none_is_an_error_not_the_passage_null():
    @tool
    def search(query: str) -> str:
        """Search passages."""
        return None  # type: ignore[return-value]

    with pytest.raises(RetrievalError, match=r"the retriever search failed .*returned None: it must return"):
        AgentGate(llm=unsure(), config=CONFIG, retriever=search).decide(QUESTION)
    middleware = SeaKRMiddleware(
        llm=unsure(), config=CONFIG, retriever=search, on_retrieval_error="answer_without", one_shot=True
    )
    model = chat(AIMessage("France"))
    state = create_agent(model, middleware=[middleware]).invoke({"messages": [("user", QUESTION)]})
    assert state["seakr_passages"] == [] and "returned None" in state["seakr_decision"]["error"]
    assert "null" not in str(model.seen[0][0].content)  # nothing was added to the system message


def test_the_middleware_keeps_answer_without_for_a_failing_retriever():
    retriever = ListRetriever(queries=[], fail=True)
    state = agent_with(chat(AIMessage("France")), retriever, unsure(), on_retrieval_error="answer_without").invoke(
        {"messages": [("user", QUESTION)]}
    )
    assert state["messages"][-1].content == "France" and state["seakr_passages"] == []
    assert state["seakr_decision"]["retrieve"] and "search service down" in state["seakr_decision"]["error"]


# ------------------------------------------------------------------------------------------ state and template
def test_before_agent_on_a_state_without_messages_says_what_it_reads():
    middleware = SeaKRMiddleware(llm=unsure(), config=CONFIG, retriever=ListRetriever(queries=[]))
    with pytest.raises(ValueError, match=r"reads the user's question from the agent state's 'messages'.*keys \[\]"):
        middleware.before_agent({}, None)
    assert middleware.before_agent({"messages": []}, None) is None  # no question yet: nothing to decide


@pytest.mark.parametrize(
    ("template", "named"),
    [
        ('Context as JSON {"passage": 1}: {passages}', r'\{"passage": 1\} besides \{passages\}.*\{\{"passage": 1\}\}'),
        ("{passages} for {question}", r"\{question\} besides \{passages\}.*\{\{question\}\}"),
        ("a lone } then {passages}", r"Single '\}'.*double every literal brace"),
        ("no slot at all", r"must contain \{passages\}, where the kept passage goes( \[|$)"),
        ("Context: {docs}", r"must contain \{passages\}.*it has \{docs\}.*rename it \{passages\}.*\{\{docs\}\}"),
    ],
)
def test_a_context_template_with_stray_braces_is_refused_at_construction(template, named):
    with pytest.raises(ValueError, match=named):
        SeaKRMiddleware(llm=unsure(), retriever=ListRetriever(), context_template=template)


def test_literal_braces_written_doubled_reach_the_model():
    middleware = SeaKRMiddleware(
        llm=unsure(), config=CONFIG, retriever=ListRetriever(queries=[]), context_template="{{json}}: {passages}"
    )
    model = chat(AIMessage("France"))
    create_agent(model, middleware=[middleware]).invoke({"messages": [("user", QUESTION)]})
    assert model.seen[0][0].content.startswith("{json}: ")


# ----------------------------------------------------------------------------- settings that contradict or idle
def test_settings_that_contradict_each_other_are_refused():
    with pytest.raises(ValueError, match=r"retriever_tool='search'.*skip_tool_when_sure=False skips none"):
        SeaKRMiddleware(llm=unsure(), retriever_tool="search", skip_tool_when_sure=False, one_shot=True)
    never = CONFIG.with_(retrieve="never")
    with pytest.raises(ValueError, match=r"retrieve='never' would never call its retriever"):
        SeaKRMiddleware(llm=unsure(), config=never, retriever=ListRetriever())
    with pytest.raises(ValueError, match=r"retrieve='never' would never call its retriever"):
        LangChainGate(retriever=ListRetriever(), llm=unsure(), config=never)
    with pytest.raises(ValueError, match=r"retrieve='never' would never call its retriever"):
        LlamaIndexGate(NodeListRetriever(), LlamaIndexLLM(backend=unsure(), chat_template=False), never)
    with pytest.raises(ValueError, match=r"base_url=.*backend=a ScriptedBackend.*pass one of them"):
        ChatSeaKR(base_url="http://127.0.0.1:9", backend=unsure())
    with pytest.raises(ValueError, match=r"base_url=.*model='qwen'.*leave model out"):
        ChatSeaKR(base_url="http://127.0.0.1:9", model="qwen")
    with pytest.raises(ValueError, match=r"base_url=.*model='qwen'.*leave model out"):
        LlamaIndexLLM(base_url="http://127.0.0.1:9", model="qwen")
    assert SeaKRMiddleware(llm=unsure(), config=never, one_shot=True).settings.retriever is None  # decides only


def test_search_settings_given_to_what_searches_nothing_are_refused():
    with pytest.raises(TypeError, match=r"SelfAwareReranker .*searches nothing, so search_timeout= would do nothing"):
        SelfAwareReranker(llm=unsure(), search_timeout=5)
    with pytest.raises(TypeError, match=r"SelfAwareReranker .*searches nothing, so on_retrieval_error= would do"):
        LlamaIndexReranker(LlamaIndexLLM(backend=unsure(), chat_template=False), on_retrieval_error="raise")
    with pytest.raises(TypeError, match=r"seakr_gate_tool .*searches nothing, so retriever= would do nothing"):
        seakr_gate_tool(llm=unsure(), retriever=ListRetriever())
    with pytest.raises(TypeError, match=r"settings must be an AgentLoop or an AgentGate"):
        SeaKRMiddleware("not a gate")
