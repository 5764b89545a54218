"""The LlamaIndex adapters' logic with the scripted back-end: what each component returns, records and refuses.

The scripted back-end's uncertainty is real EigenScore over vectors whose spread the script sets (spread 0: about
-6.9, below the default delta -6.0, "certain"; spread >= 0.1: far above it), so every decision is predictable.
The adapters must decide exactly as the core does: several tests compare them with ``SeaKR`` run directly.
"""

from __future__ import annotations

import asyncio
import json
import re
import threading
import time

import pytest
from fakes import FakeRetriever, Reply, ScriptedBackend, passage
from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.bridge.pydantic import ValidationError
from llama_index.core.instrumentation import get_dispatcher
from llama_index.core.instrumentation.event_handlers import BaseEventHandler
from llama_index.core.instrumentation.events.rerank import ReRankEndEvent, ReRankStartEvent
from llama_index.core.llms import ChatMessage, MockLLM
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.core.schema import MetadataMode, NodeWithScore, QueryBundle, TextNode
from llama_index.core.workflow import WorkflowTimeoutError
from workflows.testing import WorkflowTestRunner

from llamaindex_seakr import (
    AnswerChosenEvent,
    ConcurrentBackend,
    GateDecidedEvent,
    PassageRetriever,
    PassagesRerankedEvent,
    PassagesRetrievedEvent,
    QuestionAnsweredEvent,
    SeaKRLLM,
    SeaKRPhase,
    SeaKRPhaseEvent,
    SeaKRQueryEngine,
    SeaKRQuestionEvent,
    SeaKRWorkflow,
    SelfAwareReranker,
    StepAssessedEvent,
    StepFinishedEvent,
    UncertaintyGatedRetriever,
    concurrent_backend,
)
from llamaindex_seakr.threads import iterate_in_thread
from seakr_integrations.backends.base import SelfAwareBackend
from seakr_integrations.calibration import PAPER_DELTA
from seakr_integrations.params import SamplingConfig
from seakr_integrations.reasoning import RetrievalError, SeaKR, SeaKRConfig
from seakr_integrations.uncertainty.estimate import estimate

CONFIG = SeaKRConfig.paper(k=4, num_exemplars=0, max_tokens=10, delta=PAPER_DELTA)  # the authors' decisions (parity)
QUESTION = "Which country is the Eiffel Tower in?"
SPREADS = {"text of p1": 0.5, "text of p2": 0.2, "text of p3": 0.8}


def parse(prompt: str) -> tuple[str, list[str], str]:
    """(question, context passages, answer so far) of a prompt built without exemplars or chat template."""
    head, _, answer = prompt.rpartition("\nAnswer:")
    return head.rsplit("Question: ", 1)[1], re.findall(r"\[\d+\] (.*)\n", head), answer.strip()


def is_step(config: SamplingConfig) -> bool:
    return ". " in config.stop


def eiffel(prompt: str, config: SamplingConfig) -> Reply:
    """Uncertain first step; p2 leaves the least uncertain next step; then the answer."""
    if "Question: " not in prompt:  # a plain completion (SeaKRLLM.complete, response synthesis)
        return Reply("Plain completion.", spread=0.3)
    _, context, answer = parse(prompt)
    if not is_step(config):
        return Reply("So the answer is France", 0.0)
    if not context:
        return Reply("The Eiffel Tower stands in Germany", spread=1.0, low=("Germany",))
    if not answer:
        return Reply("It is in France", spread=SPREADS[context[-1]])
    return Reply("So the answer is France", spread=1.0)


def slow(respond, seconds: float):
    def respond_slowly(prompt: str, config: SamplingConfig) -> Reply:
        time.sleep(seconds)
        return respond(prompt, config)

    return respond_slowly


def make_nodes() -> list[NodeWithScore]:
    return [
        NodeWithScore(
            node=TextNode(id_=f"p{i}", text=f"text of p{i}", metadata={"title": f"Page {i}", "source": "wiki"}),
            score=1.0 / i,
        )
        for i in (1, 2, 3)
    ]


class NodeListRetriever(BaseRetriever):
    """A LlamaIndex retriever returning the same nodes for every query (its own objects, as a docstore would)."""

    def __init__(self, nodes: list[NodeWithScore] | None = None, error: Exception | None = None) -> None:
        super().__init__()
        self.nodes = make_nodes() if nodes is None else nodes
        self.error = error
        self.queries: list[str] = []

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        self.queries.append(query_bundle.query_str)
        if self.error is not None:
            raise self.error
        return list(self.nodes)


class Capture(BaseEventHandler):
    events: list = []

    @classmethod
    def class_name(cls) -> str:
        return "Capture"

    def handle(self, event, **kwargs) -> None:
        self.events.append(event)


@pytest.fixture
def captured():
    """Instrumentation events dispatched during the test (root dispatcher)."""
    root = get_dispatcher()
    handler = Capture(events=[])
    root.add_event_handler(handler)
    yield handler.events
    root.event_handlers.remove(handler)


def llm_for(respond=eiffel, **kwargs) -> SeaKRLLM:
    return SeaKRLLM(backend=ScriptedBackend(respond), k=4, max_tokens=10, **kwargs)


class Ticker:
    """Counts event-loop turns while a coroutine runs: a blocked loop does not tick."""

    def __init__(self) -> None:
        self.ticks = 0
        self.running = True

    async def run(self) -> None:
        while self.running:
            self.ticks += 1
            await asyncio.sleep(0.01)


async def ticking(coro):
    ticker = Ticker()
    task = asyncio.create_task(ticker.run())
    try:
        result = await coro
    finally:
        ticker.running = False
        await task
    return result, ticker.ticks


# ------------------------------------------------------------------------------------------------------- SeaKRLLM
def test_llm_metadata_class_name_and_serialisation():
    backend = ScriptedBackend(eiffel, max_context=2048)
    llm = SeaKRLLM(backend=backend, k=5, max_tokens=33)
    assert SeaKRLLM.class_name() == "SeaKRLLM" and llm.class_name() == "SeaKRLLM"
    meta = llm.metadata
    assert (meta.context_window, meta.num_output, meta.model_name) == (2048, 33, "scripted")
    assert meta.is_chat_model is False  # the scripted tokenizer has no chat template
    data = json.loads(json.dumps(llm.to_dict()))
    assert data["class_name"] == "SeaKRLLM" and data["k"] == 5
    assert llm.backend.inner is backend
    cfg = llm.seakr_config(delta=1.5)
    assert (cfg.k, cfg.max_tokens, cfg.delta, cfg.estimator) == (5, 33, 1.5, "eigenscore")


def test_llm_complete_carries_uncertainty_samples_and_logprobs():
    backend = ScriptedBackend(lambda p, c: Reply("Paris.", spread=0.0 if "sure" in p else 1.0))
    llm = SeaKRLLM(backend=backend, k=4, max_tokens=12, stop=["\n"])
    sure, unsure = llm.complete("sure: capital of France?"), llm.complete("capital of Freedonia?")
    assert sure.text == "Paris."
    u_sure, u_unsure = sure.additional_kwargs["uncertainty"], unsure.additional_kwargs["uncertainty"]
    assert u_sure["value"] < -6.0 < u_unsure["value"]
    assert (u_sure["estimator"], u_sure["layer"], u_sure["source"], u_sure["num_samples"]) == (
        "eigenscore",
        1,
        "mlp",
        4,
    )
    assert sure.additional_kwargs["samples"] == ["Paris."] * 4
    # the same number the core computes for the same call
    (out,) = backend.generate(["capital of Freedonia?"], llm.sampling_config())
    assert u_unsure["value"] == pytest.approx(estimate(out).value)
    prompt, config = backend.batches[0][0]
    assert prompt == "sure: capital of France?" and config.k == 4 and config.stop == ("\n",) and config.max_tokens == 12
    assert [lp[0].logprob for lp in sure.logprobs] == [0.0] * 7  # 6 characters + EOS, all certain
    again = llm.complete("sure: x", k=3, stop=["."])  # per-call overrides
    assert len(again.additional_kwargs["samples"]) == 3 and backend.batches[-1][0][1].stop == (".",)
    perplexity = llm.complete("sure: x", estimator="perplexity").additional_kwargs["uncertainty"]
    assert perplexity["estimator"] == "perplexity"


def test_llm_stream_and_chat():
    llm = llm_for(lambda p, c: Reply("Paris is the capital.", spread=0.5))
    chunks = list(llm.stream_complete("capital?"))
    assert "".join(c.delta for c in chunks) == "Paris is the capital." == chunks[-1].text
    assert len(chunks) > 1 and all(c.additional_kwargs["uncertainty"]["value"] > -6 for c in chunks)
    chat = llm.chat([ChatMessage(role="user", content="capital?")])
    assert chat.message.content == "Paris is the capital."
    assert chat.message.additional_kwargs["uncertainty"]["estimator"] == "eigenscore"
    empty = list(llm_for(lambda p, c: Reply("", spread=0.5)).stream_complete("q"))
    assert [c.text for c in empty] == [""] and empty[0].additional_kwargs["uncertainty"]["value"] is None


def test_llm_bad_input():
    with pytest.raises(TypeError, match="self-aware"):
        SeaKRLLM(backend=MockLLM())  # an LLM without hidden states
    with pytest.raises(TypeError, match="self-aware"):
        SeaKRLLM(backend=42)
    with pytest.raises(ValueError, match="k=1"):
        SeaKRLLM(backend=ScriptedBackend(eiffel), k=1)
    with pytest.raises(ValidationError, match="estimator"):
        SeaKRLLM(backend=ScriptedBackend(eiffel), estimator="vibes")
    with pytest.raises(ValueError, match="chat template"):
        SeaKRLLM(backend=ScriptedBackend(eiffel), chat_template=True)
    llm = llm_for()
    for prompt in ("", "   "):
        with pytest.raises(ValueError, match="prompt is empty"):
            llm.complete(prompt)
    with pytest.raises(ValueError, match="backend=.*choose"):
        SeaKRLLM(backend="tensorflow")
    with pytest.raises(TypeError, match="SelfAwareReranker needs a self-aware LLM"):
        SelfAwareReranker(llm=MockLLM())


async def test_llm_async_paths_do_not_block_the_event_loop():
    llm = llm_for(slow(lambda p, c: Reply("Paris.", spread=0.5), 0.3))
    response, ticks = await ticking(llm.acomplete("capital?"))
    assert response.text == "Paris." and ticks >= 10
    chunks, ticks = await ticking(_collect(llm.astream_complete("capital?")))
    assert "".join(c.delta for c in chunks) == "Paris." and ticks >= 10
    chat, ticks = await ticking(llm.achat([ChatMessage(role="user", content="capital?")]))
    assert chat.message.content == "Paris." and "uncertainty" in chat.message.additional_kwargs and ticks >= 10
    streamed, _ = await ticking(_collect(llm.astream_chat([ChatMessage(role="user", content="capital?")])))
    assert streamed[-1].message.content == "Paris."
    with pytest.raises(ValueError, match="prompt is empty"):
        await llm.acomplete(" ")


async def _collect(agen_coro):
    return [x async for x in await agen_coro]


# ----------------------------------------------------------------------------------------- UncertaintyGatedRetriever
def test_gate_skips_when_the_model_is_confident(captured):
    inner = NodeListRetriever()
    gate = UncertaintyGatedRetriever(inner, llm_for(lambda p, c: Reply("Paris is the capital", spread=0.0)), CONFIG)
    assert gate.class_name() == "UncertaintyGatedRetriever"
    assert gate.retrieve("What is the capital of France?") == []
    assert inner.queries == []  # the wrapped retriever was never called
    decision = gate.last_decision
    assert decision.retrieve is False and decision.uncertainty < CONFIG.delta and decision.documents == []
    assert decision.reason == "confident" and decision.generation == "Paris is the capital"
    [event] = [e for e in captured if isinstance(e, GateDecidedEvent)]
    assert event.retrieve is False and event.reason == decision.reason and event.num_documents == 0
    assert event.explanation == decision.explanation and event.data["kind"] == "gate_decided"
    assert json.loads(json.dumps(decision.to_dict()))["retrieve"] is False


def test_gate_retrieves_when_uncertain_and_tags_copies_of_the_nodes(captured):
    inner = NodeListRetriever()
    llm = llm_for(lambda p, c: Reply("It might be Lyon", spread=1.0))
    gate = UncertaintyGatedRetriever(inner, llm, CONFIG)
    nodes = gate.retrieve("What is the capital of France?")
    assert [n.node.node_id for n in nodes] == ["p1", "p2", "p3"] and inner.queries == ["What is the capital of France?"]
    assessed = SeaKR(llm.backend, None, CONFIG).assess("What is the capital of France?")
    for node in nodes:
        meta = node.node.metadata
        assert meta["seakr_gate_retrieve"] is True and meta["source"] == "wiki"
        assert meta["seakr_gate_uncertainty"] == pytest.approx(assessed.uncertainty.value)
        assert meta["seakr_gate_delta"] == CONFIG.delta and meta["seakr_gate_reason"] == "uncertain"
        assert "seakr_" not in node.node.get_content(metadata_mode=MetadataMode.LLM)  # hidden from the LLM
        assert "seakr_" not in node.node.get_content(metadata_mode=MetadataMode.EMBED)
    assert all("seakr_gate_retrieve" not in n.node.metadata for n in inner.nodes)  # the retriever's nodes untouched
    assert [n.score for n in nodes] == [n.score for n in inner.nodes]
    assert gate.last_decision.retrieve is True and gate.last_decision.documents == nodes
    assert [e.retrieve for e in captured if isinstance(e, GateDecidedEvent)] == [True]


def test_gate_decides_like_the_loop_in_both_modes_and_can_always_retrieve():
    confident = llm_for(lambda p, c: Reply("Paris is the capital", spread=0.0))
    always = UncertaintyGatedRetriever(NodeListRetriever(), confident, CONFIG, always_retrieve=True)
    assert len(always.retrieve("capital of France?")) == 3
    assert always.last_decision.retrieve is True and always.last_decision.reason == "always_retrieve"
    assert always.last_decision.uncertainty < CONFIG.delta  # the assessment still ran and is recorded
    empty = UncertaintyGatedRetriever(NodeListRetriever(), llm_for(lambda p, c: Reply("", spread=0.0)), CONFIG)
    assert len(empty.retrieve("capital of France?")) == 3 and empty.last_decision.reason == "empty_generation"
    assert "wrote nothing" in empty.last_decision.explanation
    # single-hop: the direct answer is assessed (no one-sentence stop), threshold "not below delta"
    backend = ScriptedBackend(lambda p, c: Reply("Paris", spread=0.0))
    single = UncertaintyGatedRetriever(
        NodeListRetriever(), SeaKRLLM(backend=backend, k=4), CONFIG.with_(mode="single_hop")
    )
    assert single.retrieve("capital of France?") == [] and not is_step(backend.batches[-1][0][1])
    assert single.last_decision.reason == "confident" and " < delta " in single.last_decision.explanation


def test_gate_bad_input():
    llm = llm_for(lambda p, c: Reply("It might be Lyon", spread=1.0))
    failing = UncertaintyGatedRetriever(NodeListRetriever(error=ConnectionError("index is down")), llm, CONFIG)
    with pytest.raises(
        RetrievalError, match="NodeListRetriever failed for query 'capital of France\\?'.*index is down"
    ):
        failing.retrieve("capital of France?")
    for query in ("", "  "):
        with pytest.raises(ValueError, match="query is empty"):
            failing.retrieve(query)
    with pytest.raises(TypeError, match="UncertaintyGatedRetriever needs a self-aware LLM"):
        UncertaintyGatedRetriever(NodeListRetriever(), MockLLM())
    with pytest.raises(TypeError, match="needs a LlamaIndex retriever"):
        UncertaintyGatedRetriever(["not", "a", "retriever"], llm)
    with pytest.raises(TypeError, match="SeaKRConfig"):
        UncertaintyGatedRetriever(NodeListRetriever(), llm, config={"delta": 1.0})


async def test_gate_async_path():
    llm = llm_for(slow(lambda p, c: Reply("It might be Lyon", spread=1.0), 0.3))
    gate = UncertaintyGatedRetriever(NodeListRetriever(), llm, CONFIG)
    nodes, ticks = await ticking(gate.aretrieve("capital of France?"))
    assert len(nodes) == 3 and ticks >= 10 and nodes[0].node.metadata["seakr_gate_retrieve"] is True
    failing = UncertaintyGatedRetriever(NodeListRetriever(error=ConnectionError("down")), llm, CONFIG)
    with pytest.raises(RetrievalError, match="down"):
        await failing.aretrieve("capital of France?")


def test_gate_over_a_core_retriever():
    retriever = FakeRetriever(default=[passage("a", "text of a"), passage("b", "text of b")])
    gate = UncertaintyGatedRetriever(retriever, llm_for(lambda p, c: Reply("Lyon?", spread=1.0)), CONFIG)
    assert isinstance(gate.retriever, PassageRetriever)
    nodes = gate.retrieve("capital of France?")
    assert [(n.node.node_id, n.node.text, n.node.metadata["title"]) for n in nodes] == [
        ("a", "text of a", "a"),
        ("b", "text of b", "b"),
    ]
    assert retriever.queries == [("capital of France?", 3)]


# --------------------------------------------------------------------------------------------- SelfAwareReranker
def test_rerank_orders_by_uncertainty_like_the_core(captured):
    llm = llm_for()
    rerank = SelfAwareReranker(llm=llm, top_n=2, config=CONFIG)
    assert rerank.class_name() == "SelfAwareReranker" and rerank.to_dict()["top_n"] == 2
    nodes = make_nodes()
    out = rerank.postprocess_nodes(nodes, query_str=QUESTION)
    core = SeaKR(ScriptedBackend(eiffel), None, CONFIG).rerank(QUESTION, [passage(f"p{i}") for i in (1, 2, 3)])
    assert [n.node.node_id for n in out] == ["p2", "p1"] == [c.passage.id for c in core[:2]]
    for node, cand in zip(out, core, strict=False):
        assert node.score == pytest.approx(-cand.uncertainty.value)  # score = -U
        meta = node.node.metadata
        assert meta["seakr_uncertainty"] == pytest.approx(cand.uncertainty.value)
        assert meta["seakr_generation"] == "It is in France" and meta["seakr_search_rank"] == cand.rank
        assert meta["seakr_chosen"] is cand.chosen
        assert meta["retrieval_score"] == nodes[cand.rank - 1].score and meta["title"] == f"Page {cand.rank}"
        assert "seakr_" not in node.node.get_content(metadata_mode=MetadataMode.LLM)
    assert out[0].score > out[1].score
    assert [n.score for n in nodes] == [1.0, 0.5, 1 / 3] and "seakr_uncertainty" not in nodes[0].node.metadata
    start = [e for e in captured if isinstance(e, ReRankStartEvent)]
    end = [e for e in captured if isinstance(e, ReRankEndEvent)]
    assert len(start) == len(end) == 1
    assert start[0].top_n == 2 and start[0].model_name == "scripted" and len(start[0].nodes) == 3
    assert [n.node.node_id for n in end[0].nodes] == ["p2", "p1"]


def test_rerank_empty_generation_ranks_last_unscored():
    def respond(prompt, config):
        _, context, _ = parse(prompt)
        return Reply("", 0.0) if context and context[-1] == "text of p1" else Reply("It is in France", 0.5)

    out = SelfAwareReranker(llm=llm_for(respond), top_n=3, config=CONFIG, keep_retrieval_score=False).postprocess_nodes(
        make_nodes(), query_str=QUESTION
    )
    assert [n.node.node_id for n in out] == ["p2", "p3", "p1"]  # ties keep the retriever's order
    assert out[-1].score is None and out[-1].node.metadata["seakr_uncertainty"] is None
    assert "retrieval_score" not in out[0].node.metadata


def test_rerank_bad_input():
    llm = llm_for()
    for bad in (0, -1, 1.5, "2"):
        with pytest.raises(ValueError, match="top_n"):
            SelfAwareReranker(llm=llm, top_n=bad)
    rerank = SelfAwareReranker(llm=llm, top_n=1)
    with pytest.raises(ValueError, match="needs the query"):
        rerank.postprocess_nodes(make_nodes())
    with pytest.raises(ValueError, match="query is empty"):
        rerank.postprocess_nodes(make_nodes(), query_str="  ")
    assert rerank.postprocess_nodes([], query_str=QUESTION) == []
    with pytest.raises(TypeError, match="self-aware"):
        SelfAwareReranker(llm=MockLLM(), top_n=1)


async def test_rerank_async():
    rerank = SelfAwareReranker(llm=llm_for(slow(eiffel, 0.1)), top_n=1, config=CONFIG)
    out, ticks = await ticking(rerank.apostprocess_nodes(make_nodes(), query_str=QUESTION))
    assert [n.node.node_id for n in out] == ["p2"] and ticks >= 10


def test_rerank_in_a_retriever_query_engine():
    llm = llm_for()
    engine = RetrieverQueryEngine.from_args(
        NodeListRetriever(), llm=llm, node_postprocessors=[SelfAwareReranker(llm=llm, top_n=2, config=CONFIG)]
    )
    response = engine.query(QUESTION)
    assert [n.node.node_id for n in response.source_nodes] == ["p2", "p1"]
    assert response.source_nodes[0].score > response.source_nodes[1].score
    assert str(response) == "Plain completion."  # the synthesis went through SeaKRLLM.complete
    synthesis_prompt = llm.backend.inner.batches[-1][0][0]
    assert synthesis_prompt.index("text of p2") < synthesis_prompt.index("text of p1")
    assert "text of p3" not in synthesis_prompt and "seakr_" not in synthesis_prompt


# ---------------------------------------------------------------------------------------------- SeaKRQueryEngine
def test_query_engine_runs_the_core_loop_over_a_llamaindex_retriever(captured):
    retriever = NodeListRetriever()
    engine = SeaKRQueryEngine(retriever, llm_for(), CONFIG)
    assert engine.class_name() == "SeaKRQueryEngine"
    response = engine.query(QUESTION)
    direct = SeaKR(ScriptedBackend(eiffel), FakeRetriever(default=[passage(f"p{i}") for i in (1, 2, 3)]), CONFIG)
    expected = direct.answer(QUESTION).to_dict()
    trace = response.metadata["trace"]
    assert response.response == "France" == expected["answer"]
    # same decisions as the core over the same texts (passage titles come from node metadata here)
    for step, want in zip(trace["steps"], expected["steps"], strict=True):
        assert {k: v for k, v in step.items() if k != "candidates"} == {
            k: v for k, v in want.items() if k != "candidates"
        }
        assert [(c["id"], c["uncertainty"], c["chosen"]) for c in step["candidates"]] == [
            (c["id"], c["uncertainty"], c["chosen"]) for c in want["candidates"]
        ]
    assert retriever.queries == ["Eiffel Tower stands"]
    [source] = response.source_nodes
    assert source.node.node_id == "p2" and source.node.text == "text of p2" and source.score == 0.5
    assert source.node.metadata["title"] == "Page 2" and source.node.metadata["seakr_step"] == 0
    assert source.node.metadata["seakr_uncertainty"] == pytest.approx(
        trace["steps"][0]["candidates"][1]["uncertainty"]["value"]
    )
    assert response.metadata["strategy"] == trace["strategy"] and response.metadata["stop_reason"] == "answer found"
    json.dumps(response.metadata, allow_nan=False)
    kinds = [e.kind for e in captured if isinstance(e, SeaKRPhaseEvent)]
    assert kinds == [
        "step_assessed",
        "passages_retrieved",
        "passages_reranked",
        "step_finished",
        "step_assessed",
        "step_finished",
        "answer_chosen",
        "question_answered",
    ]


def test_query_engine_errors():
    llm = llm_for()
    failing = SeaKRQueryEngine(NodeListRetriever(error=ConnectionError("index is down")), llm, CONFIG)
    with pytest.raises(RetrievalError, match="Eiffel Tower.*index is down"):
        failing.query(QUESTION)
    tolerant = SeaKRQueryEngine(
        NodeListRetriever(error=ConnectionError("index is down")),
        llm,
        CONFIG.with_(on_retrieval_error="answer_without"),
    )
    response = tolerant.query(QUESTION)
    assert response.source_nodes == [] and "index is down" in response.metadata["trace"]["notes"][0]
    for query in ("", "   "):
        with pytest.raises(ValueError, match="query is empty"):
            failing.query(query)
    with pytest.raises(TypeError, match="SeaKRQueryEngine needs a self-aware LLM"):
        SeaKRQueryEngine(NodeListRetriever(), MockLLM())
    with pytest.raises(TypeError, match="SeaKRQueryEngine needs a LlamaIndex retriever"):
        SeaKRQueryEngine(object(), llm)


async def test_query_engine_async_and_many():
    engine = SeaKRQueryEngine(NodeListRetriever(), llm_for(slow(eiffel, 0.05)), CONFIG)
    response, ticks = await ticking(engine.aquery(QUESTION))
    assert response.response == "France" and [n.node.node_id for n in response.source_nodes] == ["p2"]
    assert ticks >= 10
    with pytest.raises(ValueError, match="query is empty"):
        await engine.aquery("")
    backend = engine.llm.backend.inner
    before = len(backend.batches)
    many = engine.query_many([QUESTION, "In which country is the Eiffel Tower?"])
    assert [r.response for r in many] == ["France", "France"]
    assert len(backend.batches[before]) == 2  # both questions' first steps in one back-end batch


def test_query_engine_over_a_core_retriever():
    docs = [passage("p1"), passage("p2"), passage("p3")]
    engine = SeaKRQueryEngine(FakeRetriever(default=docs), llm_for(), CONFIG)
    response = engine.query(QUESTION)
    assert response.response == "France" and [n.node.node_id for n in response.source_nodes] == ["p2"]
    assert response.source_nodes[0].node.text == "text of p2"


# -------------------------------------------------------------------------------------------------- SeaKRWorkflow
PHASES = [
    StepAssessedEvent,
    PassagesRetrievedEvent,
    PassagesRerankedEvent,
    StepFinishedEvent,
    StepAssessedEvent,
    StepFinishedEvent,
    AnswerChosenEvent,
]


async def test_workflow_streams_each_phase_as_a_typed_event():
    retriever = NodeListRetriever()
    workflow = SeaKRWorkflow(retriever, llm_for(), CONFIG)
    run = await WorkflowTestRunner(workflow).run(start_event=SeaKRQuestionEvent(question=QUESTION), exclude_events=[])
    phases = [e for e in run.collected if isinstance(e, SeaKRPhase)]
    assert [type(e) for e in phases] == PHASES
    check, retrieved, reranked, step, check2, step2, final = phases
    assert check.decision == "retrieve" and check.generation == "The Eiffel Tower stands in Germany"
    assert check.uncertainty > CONFIG.delta and check.data["kind"] == "step_assessed"
    assert retrieved.query == "Eiffel Tower stands" and [n.node.node_id for n in retrieved.nodes] == ["p1", "p2", "p3"]
    assert retrieved.nodes[0].node.metadata["title"] == "Page 1"  # the retriever's own nodes
    assert [n.node.node_id for n in reranked.nodes] == ["p2", "p1", "p3"] and reranked.chosen_passage_id == "p2"
    assert reranked.nodes[0].score == pytest.approx(-reranked.nodes[0].node.metadata["seakr_uncertainty"])
    assert step.accepted == "It is in France" and step.stop is None
    assert check2.decision == "answer" and step2.stop == "answer found"
    assert final.answer == "France" and set(final.candidates) == {"rationales", "knowledge"}
    assert set(final.uncertainties) == {"rationales", "knowledge"}
    result = run.result
    assert isinstance(result, QuestionAnsweredEvent) and result.answer == "France"
    assert [n.node.node_id for n in result.source_nodes] == ["p2"]
    engine = SeaKRQueryEngine(NodeListRetriever(), llm_for(), CONFIG).query(QUESTION)
    assert result.trace == engine.metadata["trace"]
    json.dumps([e.data for e in phases], allow_nan=False)


async def test_workflow_runs_concurrently_sharing_batches():
    llm = llm_for(slow(eiffel, 0.05))
    workflow = SeaKRWorkflow(NodeListRetriever(), llm, CONFIG)
    questions = [QUESTION, "In which country is the Eiffel Tower?", "Where is the Eiffel Tower, which country?"]

    async def one(question):
        handler = workflow.run(question=question)
        streamed = [e async for e in handler.stream_events()]
        return streamed, await handler

    runs, ticks = await ticking(asyncio.gather(*(one(q) for q in questions)))
    for question, (streamed, result) in zip(questions, runs, strict=True):
        phases = [e for e in streamed if isinstance(e, SeaKRPhase)]
        assert [type(e) for e in phases] == PHASES and {e.question for e in phases} == {question}
        assert result.answer == "France" and result.trace["question"] == question
    backend = llm.backend
    assert backend.batches_run < backend.calls_received  # concurrent runs' calls were merged into shared batches
    shared = [b for b in backend.inner.batches if len({parse(p)[0] for p, _ in b}) > 1]
    assert shared  # some back-end batches held prompts of different questions
    assert ticks >= 10


async def test_workflow_errors():
    llm = llm_for()
    workflow = SeaKRWorkflow(NodeListRetriever(), llm, CONFIG)
    with pytest.raises(ValueError, match="question is empty"):
        await workflow.run(question="  ")
    failing = SeaKRWorkflow(NodeListRetriever(error=ConnectionError("index is down")), llm, CONFIG)
    with pytest.raises(RetrievalError, match="index is down"):
        await failing.run(question=QUESTION)
    with pytest.raises(TypeError, match="SeaKRWorkflow needs a self-aware LLM"):
        SeaKRWorkflow(NodeListRetriever(), MockLLM())


async def test_workflow_timeout_stops_the_loop_thread():
    llm = llm_for(slow(eiffel, 0.3))  # a full answer: 6 back-end calls, 7 prompts, about 2.1 s
    workflow = SeaKRWorkflow(NodeListRetriever(), llm, CONFIG, timeout=0.4)
    with pytest.raises(WorkflowTimeoutError):
        await workflow.run(question=QUESTION)
    await asyncio.sleep(1.0)  # the model call in progress at the timeout (the 3-passage re-ranking) finishes
    settled = len(llm.backend.inner.batches)
    await asyncio.sleep(1.0)
    assert len(llm.backend.inner.batches) == settled < 6  # no runaway loop keeps calling the model


# ------------------------------------------------------------------------------------ ConcurrentBackend, threads
def test_concurrent_backend_is_one_per_backend_and_delegates():
    backend = ScriptedBackend(eiffel, max_context=4096)
    proxy = concurrent_backend(backend)
    assert isinstance(proxy, ConcurrentBackend) and isinstance(proxy, SelfAwareBackend)
    assert concurrent_backend(backend) is proxy and concurrent_backend(proxy) is proxy
    assert SeaKRLLM(backend=backend).backend is proxy  # every component over one back-end shares one lock
    assert (proxy.model_name, proxy.max_context, proxy.tokenizer) == ("scripted", 4096, backend.tokenizer)
    assert proxy.default_layer == backend.default_layer == 1
    with pytest.raises(TypeError, match="SelfAwareBackend"):
        concurrent_backend(MockLLM())


def test_concurrent_backend_merges_waiting_calls_and_keeps_errors_apart():
    backend = ScriptedBackend(slow(lambda p, c: Reply(f"reply to {p}", 0.1), 0.2))
    proxy = ConcurrentBackend(backend)
    results: dict[str, object] = {}

    def call(name, prompts, **overrides):
        try:
            results[name] = proxy.generate(prompts, SamplingConfig(k=2), **overrides)
        except Exception as exc:
            results[name] = exc

    first = threading.Thread(target=call, args=("first", ["a"]))
    first.start()
    time.sleep(0.05)  # "first" holds the back-end; the others queue up behind it
    others = [
        threading.Thread(target=call, args=("second", ["b", "c"])),
        threading.Thread(target=call, args=("bad", ["d", " "])),
        threading.Thread(target=call, args=("third", ["e"]), kwargs={"k": 3}),
    ]
    for t in others:
        t.start()
    for t in [first, *others]:
        t.join(5)
    assert [o.greedy.text for o in results["first"]] == ["reply to a"]
    assert [o.greedy.text for o in results["second"]] == ["reply to b", "reply to c"]
    assert [len(o.samples) for o in results["third"]] == [3]
    assert isinstance(results["bad"], ValueError) and "empty" in str(results["bad"])
    # two back-end calls: "first" alone, then the waiting calls merged (the bad one failed on its own)
    assert [sorted(p for p, _ in b) for b in backend.batches] == [["a"], ["b", "c", "e"]]
    assert (proxy.calls_received, proxy.batches_run) == (4, 2)


def test_concurrent_backend_splits_merged_calls_by_layer():
    backend = ScriptedBackend(slow(lambda p, c: Reply("x", 0.1), 0.2))
    proxy = ConcurrentBackend(backend)
    out: dict[str, list] = {}
    threads = [
        threading.Thread(target=lambda n=n, layer=layer: out.setdefault(n, proxy.generate([n], k=2, layer=layer)))
        for n, layer in (("a", 0), ("b", 1), ("c", 2), ("d", 1))
    ]
    threads[0].start()
    time.sleep(0.05)
    for t in threads[1:]:
        t.start()
    for t in threads:
        t.join(5)
    assert {n: o[0].layer for n, o in out.items()} == {"a": 0, "b": 1, "c": 2, "d": 1}
    assert sorted(sorted(p for p, _ in b) for b in backend.batches) == [["a"], ["b", "d"], ["c"]]


async def test_iterate_in_thread_streams_items_and_errors():
    def numbers(stop):
        for i in range(3):
            time.sleep(0.05)
            yield i
        raise KeyError("boom")

    seen = []
    with pytest.raises(KeyError, match="boom"):
        async for item in iterate_in_thread(numbers):
            seen.append((item, threading.current_thread() is threading.main_thread()))
    assert seen == [(0, True), (1, True), (2, True)]  # consumed on the event loop's thread, as produced
    produced = []

    def endless(stop):
        while not stop.is_set():
            produced.append(len(produced))
            time.sleep(0.01)
            yield produced[-1]

    agen = iterate_in_thread(endless)
    async for item in agen:
        if item >= 2:
            break
    await agen.aclose()
    await asyncio.sleep(0.1)
    count = len(produced)
    await asyncio.sleep(0.1)
    assert len(produced) == count  # leaving the loop stopped the producer thread
