"""The LlamaIndex adapters for real: SmolLM2-135M (HF back-end, CPU) over two real indexes of real paragraphs.

One index is the embedded BM25 index of the bundled demo corpus (HotpotQA and 2Wiki paragraphs) behind
``PassageRetriever``; the other a LlamaIndex ``VectorStoreIndex`` of HotpotQA paragraphs embedded offline with
all-MiniLM-L6-v2 (``MiniLMEmbedding``).  Small settings (k=4, 16 new tokens, 2 exemplars, one retrieval round) keep
it to about a minute.  SmolLM2's answers are often wrong; what is checked is that every component did what it reports,
against what the model and the retrievers were really asked.
"""

from __future__ import annotations

import asyncio
import json
import math
from pathlib import Path

import pytest
from close import assert_close
from llama_index.core import VectorStoreIndex
from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.llms import ChatMessage
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode
from workflows.testing import WorkflowTestRunner

from llamaindex_seakr import (
    AnswerChosenEvent,
    MiniLMEmbedding,
    PassageRetriever,
    PassagesRerankedEvent,
    PassagesRetrievedEvent,
    QuestionAnsweredEvent,
    SeaKRLLM,
    SeaKRPhase,
    SeaKRQueryEngine,
    SeaKRQuestionEvent,
    SeaKRWorkflow,
    SelfAwareReranker,
    StepAssessedEvent,
    StepFinishedEvent,
    UncertaintyGatedRetriever,
)
from seakr_integrations.demo import demo_index
from seakr_integrations.reasoning import SeaKR
from seakr_integrations.reasoning.config import SeaKRConfig
from seakr_integrations.reasoning.jsonform import number_from_json
from seakr_integrations.retrieval.corpus import read_corpus

pytestmark = pytest.mark.slow

DATA = Path(__file__).resolve().parents[1] / "data"
QUESTION = "which is traditionally drunk before retiring to bed, Hot toddy or Kir?"
OTHER = "This singer of A Rather Blustery Day also voiced what hedgehog?"


class Spy(BaseRetriever):
    """Records every query a LlamaIndex retriever was asked and the node ids it returned."""

    def __init__(self, inner: BaseRetriever) -> None:
        super().__init__()
        self.inner = inner
        self.calls: list[tuple[str, list[str]]] = []
        self.texts: dict[str, str] = {}

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        nodes = self.inner.retrieve(query_bundle)
        self.calls.append((query_bundle.query_str, [n.node.node_id for n in nodes]))
        self.texts.update({n.node.node_id: n.node.get_content() for n in nodes})
        return nodes


@pytest.fixture(scope="module")
def llm(hf_smollm2) -> SeaKRLLM:
    return SeaKRLLM(backend=hf_smollm2, k=4, max_tokens=16)


@pytest.fixture(scope="module")
def config(llm):
    """The loop's settings with delta resolved, as SeaKR resolves it (the traces are checked against it)."""
    settings = SeaKRConfig(num_exemplars=2, max_steps=1, max_docs=1, n_candidates=2)
    return SeaKR(llm.backend, None, llm.loop_config(settings)).config


@pytest.fixture(scope="module")
def bm25(tmp_path_factory):
    return demo_index(progress=False, root=tmp_path_factory.mktemp("demo-index"))


@pytest.fixture(scope="module")
def vector_index() -> VectorStoreIndex:
    """A VectorStoreIndex of the paragraphs given with the first 4 HotpotQA dev questions (about 40)."""
    questions = [json.loads(line) for line in (DATA / "hotpotqa_dev.jsonl").open()][:4]
    titles = {c["title"] for q in questions for c in q["context"]}
    passages = [p for p in read_corpus(DATA / "corpus_hotpotqa.jsonl") if p.title in titles]
    assert 30 <= len(passages) <= 45
    nodes = [TextNode(id_=p.id, text=p.text, metadata={"title": p.title}) for p in passages]
    return VectorStoreIndex(nodes, embed_model=MiniLMEmbedding())


@pytest.fixture(scope="module")
def bm25_answer(llm, config, bm25):
    """SeaKRQueryEngine over the demo BM25 index for QUESTION, and the spy on its retriever."""
    spy = Spy(PassageRetriever(bm25, top_k=3))
    return SeaKRQueryEngine(spy, llm, config).query(QUESTION), spy


def check_trace(response_trace: dict, source_nodes: list[NodeWithScore], spy: Spy, config) -> None:
    """The trace against what the retriever was really asked and returned."""
    steps = response_trace["steps"]
    searched = [s["query"] for s in steps if s["query"] is not None and s["stop"] != "repeated query"]
    assert searched == [q for q, _ in spy.calls]
    returned = [ids for _, ids in spy.calls]
    at = 0
    for i, step in enumerate(steps):
        u = number_from_json(step["uncertainty"]["value"])
        if step["reason"] == "question_first":  # the question's own search: its results kept, in search order
            ids = returned[at]
            at += 1
            kept = [c["id"] for c in step["candidates"] if c["chosen"]]
            assert kept == ids[: len(kept)] and 0 < len(kept) <= config.max_docs
            assert step["chosen_passage_id"] == kept[0] and (step["stop"] is not None) == (i == len(steps) - 1)
            continue
        if step["uncertainty"]["estimator"] == "none":  # decided before any sample: a rule or the screen
            decided = (
                "unsupported_claim",
                "supported_claim",
                "uncovered_entity",
                "sure_from_tokens",
                "unsure_from_tokens",
            )
            assert step["reason"] in decided
            assert step["reason"] not in ("sure_from_tokens", "unsure_from_tokens") or step["screen"] is not None
        else:
            assert step["uncertainty"]["layer"] == 14 and step["uncertainty"]["estimator"] == "eigenscore"
        if step["reason"] == "confident":
            assert step["decision"] == "accept" and u <= config.delta
        elif step["reason"] == "uncertain":
            assert step["decision"] == "retrieve" and u > config.delta
        if step["candidates"]:
            ids = returned[at]
            at += 1
            assert {c["id"] for c in step["candidates"]} <= set(ids[: config.n_candidates])
            best = min(step["candidates"], key=lambda c: number_from_json(c["rank_value"]))
            assert best["chosen"] and sum(c["chosen"] for c in step["candidates"]) == 1
            assert step["chosen_passage_id"] == best["id"]
        assert (step["stop"] is not None) == (i == len(steps) - 1)
    chosen = [c["id"] for s in steps for c in s["candidates"] if c["chosen"]]
    assert [p["id"] for p in response_trace["passages"]] == chosen == [n.node.node_id for n in source_nodes]
    for node in source_nodes:  # the retriever's own nodes, with SeaKR's annotations
        assert node.node.get_content() == spy.texts[node.node.node_id]
        assert node.node.metadata["title"] and "seakr_uncertainty" in node.node.metadata
    assert response_trace["answer"] == (response_trace["finals"][response_trace["strategy"]]["answer"] or "")


# ------------------------------------------------------------------------------------------------------- the LLM
async def test_llm_completes_with_its_uncertainty(llm, hf_smollm2):
    assert llm.metadata.model_name == "smollm2-135m-instruct" and llm.metadata.context_window == 8192
    assert llm.metadata.num_output == 16 and llm.metadata.is_chat_model  # SmolLM2 has a chat template
    response = llm.complete("What is the capital of France?", max_tokens=10)
    u = response.additional_kwargs["uncertainty"]
    assert response.text.strip() and math.isfinite(u["value"]) and u["layer"] == 14 and u["source"] == "mlp"
    assert len(response.additional_kwargs["samples"]) == 4 and 2 <= u["num_samples"] <= 4
    assert "<|im_start|>user" in response.raw["prompt"]  # wrapped in the chat template
    again = await llm.acomplete(
        "What is the capital of France?", max_tokens=10
    )  # same seed, same model call: same result
    assert again.text == response.text  # floats may differ in their last digits between CPU runs
    assert_close(again.additional_kwargs, response.additional_kwargs)
    chunks = list(llm.stream_complete("What is the capital of France?", max_tokens=10))
    assert "".join(c.delta for c in chunks) == response.text and len(chunks) > 1
    chat = llm.chat([ChatMessage(role="user", content="What is the capital of France?")], max_tokens=10)
    assert chat.message.content == response.text  # the chat template renders the one message the same way
    assert_close(chat.message.additional_kwargs["uncertainty"], u)


# --------------------------------------------------------------------------------------------- gate over BM25
def test_gate_over_the_demo_bm25_index(llm, config, bm25):
    retriever = PassageRetriever(bm25, top_k=2)
    paper_gate = config.with_(rules="default,-claim-check")  # the samples decide every step
    probe = UncertaintyGatedRetriever(retriever, llm, paper_gate)
    u = probe.assess(QUESTION).uncertainty.value
    assert math.isfinite(u)
    uncertain = UncertaintyGatedRetriever(retriever, llm, paper_gate.with_(delta=u - 0.5))
    nodes = uncertain.retrieve(QUESTION)
    assert [n.node.node_id for n in nodes] == [p.id for p in bm25.search(QUESTION, 2)]
    assert all(n.node.metadata["seakr_gate_uncertainty"] == pytest.approx(u) for n in nodes)
    assert uncertain.last_decision.retrieve and uncertain.last_decision.reason == "uncertain"
    confident = UncertaintyGatedRetriever(retriever, llm, paper_gate.with_(delta=u + 0.5))
    assert confident.retrieve(QUESTION) == [] and not confident.last_decision.retrieve
    assert confident.last_decision.uncertainty == pytest.approx(u)
    claims = UncertaintyGatedRetriever(retriever, llm, config.with_(delta=1e9))
    checked = claims.decide(QUESTION)  # the default checks the step's claims first: no passage covers them yet
    assert checked.retrieve and checked.reason == "unsupported_claim" and "no kept passage" in checked.explanation


# ----------------------------------------------------------------------------------- re-ranker over the vectors
def test_rerank_in_a_query_engine_over_a_vector_index(llm, config, vector_index):
    spy = Spy(vector_index.as_retriever(similarity_top_k=3))
    rerank = SelfAwareReranker(llm=llm, top_n=2, config=config)
    engine = RetrieverQueryEngine.from_args(spy, llm=llm, node_postprocessors=[rerank])
    response = engine.query(QUESTION)
    [(_, retrieved)] = spy.calls
    assert len(retrieved) == 3 and response.response.strip()
    nodes = response.source_nodes
    assert len(nodes) == 2 and {n.node.node_id for n in nodes} <= set(retrieved)
    assert nodes[1].score is None or nodes[0].score >= nodes[1].score  # None: unscorable, ranked last
    for node in nodes:
        u = node.node.metadata["seakr_uncertainty"]
        assert node.score == (-u if u is not None else None)
        assert retrieved[node.node.metadata["seakr_search_rank"] - 1] == node.node.node_id
        assert node.node.metadata["seakr_generation"] or node.score is None


# ------------------------------------------------------------------------------------------ the query engine
def test_query_engine_over_the_demo_bm25_index(bm25_answer, config):
    response, spy = bm25_answer
    trace = response.metadata["trace"]
    assert response.response == trace["answer"] and spy.calls  # SmolLM2 is uncertain: it searched
    check_trace(trace, response.source_nodes, spy, config)
    assert trace["stop_reason"] in ("step limit", "passage limit", "answer found")
    json.dumps(response.metadata, allow_nan=False)


async def test_query_engine_async_over_a_vector_index(llm, config, vector_index):
    spy = Spy(vector_index.as_retriever(similarity_top_k=2))
    engine = SeaKRQueryEngine(spy, llm, config)
    response = await engine.aquery(QUESTION)
    check_trace(response.metadata["trace"], response.source_nodes, spy, config)
    assert response.source_nodes  # the vector index found paragraphs of this very question


# ------------------------------------------------------------------------------------------------ the workflow
async def test_workflow_runs_concurrently_and_matches_the_query_engine(llm, config, bm25, bm25_answer):
    spies = [Spy(PassageRetriever(bm25, top_k=3)) for _ in range(2)]
    runs = await asyncio.gather(
        *(
            WorkflowTestRunner(SeaKRWorkflow(spy, llm, config)).run(start_event=SeaKRQuestionEvent(question=q))
            for spy, q in zip(spies, (QUESTION, OTHER), strict=True)
        )
    )
    for run, spy in zip(runs, spies, strict=True):
        result = run.result
        assert isinstance(result, QuestionAnsweredEvent)
        check_trace(result.trace, result.source_nodes, spy, config)
        phases = [e for e in run.collected if isinstance(e, SeaKRPhase)]
        steps = result.trace["steps"]
        assert [e.step_index for e in phases if isinstance(e, StepAssessedEvent)] == [s["index"] for s in steps]
        assert [e.accepted for e in phases if isinstance(e, StepFinishedEvent)] == [s["accepted"] for s in steps]
        retrieved = [e for e in phases if isinstance(e, PassagesRetrievedEvent)]
        assert [(e.query, [n.node.node_id for n in e.nodes]) for e in retrieved] == [
            (q, ids[: config.n_candidates]) for q, ids in spy.calls
        ]
        # the opening search on the question keeps its results as found: a step with no re-ranking to report
        assert steps[0]["reason"] == "question_first"
        reranked = [e for e in phases if isinstance(e, PassagesRerankedEvent)]
        assert [e.chosen_passage_id for e in reranked] == [
            s["chosen_passage_id"] for s in steps[1:] if s["chosen_passage_id"]
        ]
        assert isinstance(phases[-1], AnswerChosenEvent) and phases[-1].answer == result.answer
    # the workflow adds no logic: the same question through the query engine takes the same decisions
    assert_close(bm25_answer[0].metadata["trace"], runs[0].result.trace)


async def test_an_agent_searches_with_seakrs_loop_and_streams_its_phases(llm, config, bm25):
    """A real ``FunctionAgent`` calls ``seakr_search_tool`` (SeaKR's loop on SmolLM2 over the demo index); the
    agent's model is LlamaIndex's scripted function-calling mock: SmolLM2 calls no tools."""
    from llama_index.core.agent.workflow import FunctionAgent, ToolCallResult
    from llama_index.core.base.llms.types import MessageRole, ToolCallBlock
    from llama_index.core.llms.mock import MockFunctionCallingLLM

    from llamaindex_seakr import KnowledgeGatheredEvent, seakr_search_tool

    read: list[str] = []

    def respond(messages, **kwargs):
        results = [m for m in messages if m.role == MessageRole.TOOL]
        if not results:
            call = ToolCallBlock(tool_call_id="c1", tool_name="seakr_search", tool_kwargs={"question": QUESTION})
            return ChatMessage(role=MessageRole.ASSISTANT, blocks=[call])
        read.append(str(results[-1].content))
        return ChatMessage(role=MessageRole.ASSISTANT, content="Hot toddy")

    spy = Spy(PassageRetriever(bm25, top_k=3))
    tool = seakr_search_tool(spy, llm, config)
    agent = FunctionAgent(tools=[tool], llm=MockFunctionCallingLLM(response_generator=respond, is_chat_model=True))
    handler = agent.run(user_msg=QUESTION)
    events = [ev async for ev in handler.stream_events()]
    await handler
    (gathered,) = [e for e in events if isinstance(e, KnowledgeGatheredEvent)]
    assert gathered.searches == len(spy.calls) >= 1 and gathered.lm_calls >= 1
    assert gathered.nodes and gathered.stop
    assert all(n.node.node_id in spy.texts for n in gathered.nodes)  # the retriever's own nodes
    (result,) = [e for e in events if isinstance(e, ToolCallResult)]
    assert read == [result.tool_output.content] and all(spy.texts[n.node.node_id] in read[0] for n in gathered.nodes)
