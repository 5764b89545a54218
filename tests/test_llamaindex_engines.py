"""The LlamaIndex query engine, workflow and concurrent back-end with the scripted back-end (``llamaindex_fakes``):
the core loop over a LlamaIndex retriever, typed events per phase, and concurrent questions sharing batches.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time

import pytest
from fakes import FakeRetriever, Reply, ScriptedBackend, passage
from llama_index.core.llms import MockLLM
from llama_index.core.workflow import WorkflowTimeoutError
from llamaindex_fakes import (
    CONFIG,
    QUESTION,
    NodeListRetriever,
    eiffel,
    llm_for,
    parse,
    slow,
    ticking,
)
from workflows.testing import WorkflowTestRunner

from llamaindex_seakr import (
    AnswerChosenEvent,
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
)
from llamaindex_seakr.agent_tool import SeaKRSearch
from llamaindex_seakr.threads import iterate_in_thread
from seakr_integrations.backends.base import SelfAwareBackend
from seakr_integrations.backends.concurrent import ConcurrentBackend, concurrent_backend
from seakr_integrations.params import SamplingConfig
from seakr_integrations.reasoning import RetrievalError, SeaKR, SeaKRConfig


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
        CONFIG,
        on_retrieval_error="answer_without",
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


def test_every_seakr_component_takes_its_model_and_settings_one_way():
    """One base (``llamaindex_seakr._seakr.SeaKRComponent``): each component keeps the config as given, runs with
    its LLM's sampling under the config's changes, keeps one loop while nothing changes (searching the retriever it
    was given, or nothing for the gate and the re-ranker), and refuses a config that is none the same way."""
    llm, given = llm_for(), SeaKRConfig(k=3)
    makers = [
        lambda config: SeaKRQueryEngine(NodeListRetriever(), llm, config),
        lambda config: SeaKRWorkflow(NodeListRetriever(), llm, config),
        lambda config: SeaKRSearch(NodeListRetriever(), llm, config),
        lambda config: UncertaintyGatedRetriever(NodeListRetriever(), llm, config),
        lambda config: SelfAwareReranker(llm, config=config),
    ]
    components = [make(given) for make in makers]
    for component in components:
        assert component.given_config is given
        assert (component.config.k, component.config.max_tokens) == (3, 10)
        assert component.seakr is component.seakr
    assert [c.seakr.retriever is None for c in components] == [False, False, False, True, True]
    for make in makers:
        with pytest.raises(TypeError, match="config must be a SeaKRConfig, got dict"):
            make({"k": 3})
