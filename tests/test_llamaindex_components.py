"""The LlamaIndex adapters' components with the scripted back-end (``llamaindex_fakes``): what the LLM, the gate
and the re-ranker return, record and refuse.  They must decide exactly as the core does: several tests compare them
with ``SeaKR`` run directly.
"""

from __future__ import annotations

import json

import pytest
from fakes import FakeRetriever, Reply, ScriptedBackend, passage
from llama_index.core.bridge.pydantic import ValidationError
from llama_index.core.instrumentation.events.rerank import ReRankEndEvent, ReRankStartEvent
from llama_index.core.llms import ChatMessage, MockLLM
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.core.schema import MetadataMode
from llamaindex_fakes import (
    CONFIG,
    QUESTION,
    NodeListRetriever,
    eiffel,
    is_step,
    llm_for,
    make_nodes,
    parse,
    slow,
    ticking,
)

from llamaindex_seakr import (
    GateDecidedEvent,
    PassageRetriever,
    SeaKRLLM,
    SelfAwareReranker,
    UncertaintyGatedRetriever,
)
from seakr_integrations.reasoning import RetrievalError, SeaKR
from seakr_integrations.reasoning.config import SeaKRConfig
from seakr_integrations.uncertainty.estimate import estimate


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
    cfg = llm.loop_config(SeaKRConfig(delta=1.5))
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
