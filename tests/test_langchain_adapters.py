"""The LangChain adapters' own behaviour, offline and fast, on the scripted self-aware back-end of ``fakes.py``
(its uncertainty is real EigenScore over vectors whose spread the script sets).  The real-model versions of these
checks are in ``test_langchain_real.py``."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from fakes import Reply, ScriptedBackend
from langchain_classic.retrievers import ContextualCompressionRetriever
from langchain_core.callbacks import BaseCallbackHandler, CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.language_models import FakeListChatModel, FakeListLLM
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import PromptTemplate
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnablePassthrough
from pydantic import ValidationError
from test_reasoner import CONFIG, final, is_step, parse
from test_reasoner_components import eiffel

from langchain_seakr import (
    ChatSeaKR,
    PassageIndexRetriever,
    SeaKRChain,
    SeaKRLLM,
    SelfAwareReranker,
    UncertaintyGatedRetriever,
)
from seakr_integrations.reasoning import RetrievalError
from seakr_integrations.reasoning.events import EVENT_TYPES, langchain_event_name

DOCS = [
    Document("text of p1", id="p1", metadata={"title": "P1", "source": "wiki"}),
    Document("text of p2", id="p2", metadata={"title": "P2", "source": "wiki"}),
    Document("text of p3", id="p3", metadata={"title": "P3", "source": "wiki"}),
]


class ListRetriever(BaseRetriever):
    """A plain LangChain retriever over a fixed list (records its queries; ``fail`` makes it raise)."""

    docs: list[Document] = DOCS
    fail: bool = False
    queries: list[str] = []

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, k: int = 3
    ) -> list[Document]:
        self.queries.append(query)
        if self.fail:
            raise ConnectionError("search service down")
        return self.docs[:k]


class Recorder(BaseCallbackHandler):
    def __init__(self) -> None:
        self.events: list[tuple[str, Any, Any]] = []

    def on_chain_start(self, serialized, inputs, *, run_id, parent_run_id=None, **kw):
        self.events.append(("chain_start", run_id, parent_run_id))

    def on_llm_start(self, serialized, prompts, *, run_id, parent_run_id=None, **kw):
        self.events.append(("llm_start", run_id, parent_run_id))

    def on_llm_end(self, response, *, run_id, parent_run_id=None, **kw):
        self.events.append(("llm_end", response.generations[0][0].generation_info["uncertainty"], parent_run_id))

    def on_retriever_start(self, serialized, query, *, run_id, parent_run_id=None, **kw):
        self.events.append(("retriever_start", query, parent_run_id))

    def on_custom_event(self, name, data, *, run_id, **kw):
        self.events.append((name, data, run_id))


def chain(**kwargs: Any) -> SeaKRChain:
    kwargs.setdefault("llm", ScriptedBackend(eiffel))
    kwargs.setdefault("retriever", ListRetriever())
    return SeaKRChain(config=CONFIG, **kwargs)


# ------------------------------------------------------------------------------------------------ SeaKRChain
def test_chain_answers_with_a_string_and_optionally_the_trace_and_original_documents():
    assert chain().invoke("Which country is the Eiffel Tower in?") == "France"
    out = chain(return_trace=True).invoke({"question": "Which country is the Eiffel Tower in?"})
    assert out["answer"] == "France" and out["strategy"] in ("rationales", "knowledge")
    assert [d.id for d in out["documents"]] == ["p2"]
    assert out["documents"][0].metadata == {"title": "P2", "source": "wiki"}  # the retriever's own Document
    step = out["trace"]["steps"][0]
    assert step["decision"] == "retrieve" and step["chosen_passage_id"] == "p2"
    assert [c["id"] for c in step["candidates"]] == ["p1", "p2", "p3"]


def test_chain_callbacks_show_every_llm_call_search_and_decision_under_the_chain_run():
    recorder = Recorder()
    chain().invoke("Which country is the Eiffel Tower in?", config={"callbacks": [recorder]})
    (root,) = [run for kind, run, parent in recorder.events if kind == "chain_start" and parent is None]
    llm_starts = [e for e in recorder.events if e[0] == "llm_start"]
    assert llm_starts and all(parent == root for _, _, parent in llm_starts)
    assert len([e for e in recorder.events if e[0] == "llm_end"]) == len(llm_starts)
    assert [(q, p) for k, q, p in recorder.events if k == "retriever_start"] == [("Eiffel Tower stands", root)]
    names = {langchain_event_name(e) for e in EVENT_TYPES}
    custom = [k for k, _, run in recorder.events if k in names and run == root]
    assert custom[:4] == [
        "seakr_step_assessed",
        "seakr_passages_retrieved",
        "seakr_passages_reranked",
        "seakr_step_finished",
    ]
    assert custom[-2:] == ["seakr_answer_chosen", "seakr_question_answered"]
    others = [k for k, _, run in recorder.events if k.startswith("seakr_") and k not in names]
    assert others == []  # each decision is sent once, under its one name


def test_batch_shares_backend_calls_and_keeps_one_run_per_question():
    def respond(prompt, config):
        question, context, _ = parse(prompt)
        if not is_step(config):
            return final(f"So the answer is {question[:5]}")
        return Reply(f"So the answer is {question[:5]}", spread=0.2) if context else Reply("Unsure", spread=1.0)

    backend = ScriptedBackend(respond)
    recorder = Recorder()
    questions = ["Alpha question?", "Beta question?", "Gamma question?"]
    answers = chain(llm=backend).batch(questions, config={"callbacks": [recorder]})
    assert answers == ["Alpha", "Beta", "Gamma"]
    assert len(backend.batches) == 3 and len(backend.batches[0]) == 3  # the three questions share each batch
    roots = [run for kind, run, parent in recorder.events if kind == "chain_start" and parent is None]
    assert len(roots) == 3
    per_root = {r: sum(1 for k, _, p in recorder.events if k == "llm_start" and p == r) for r in roots}
    assert all(n >= 3 for n in per_root.values())  # each question's calls are under its own run


def test_batch_reports_a_bad_input_without_losing_the_others():
    out = chain().batch(["Which country is the Eiffel Tower in?", "  "], return_exceptions=True)
    assert out[0] == "France" and isinstance(out[1], ValueError) and "empty" in str(out[1])
    with pytest.raises(ValueError, match="empty"):
        chain().batch(["Which country is the Eiffel Tower in?", ""])


def test_stream_yields_the_answer_and_sends_the_decisions_as_they_happen():
    recorder = Recorder()
    chunks = list(chain().stream("Which country is the Eiffel Tower in?", config={"callbacks": [recorder]}))
    assert "".join(chunks) == "France"  # what invoke returns, in pieces (tests/test_adapter_conventions.py)
    decisions = [name for name, _, _ in recorder.events if name.startswith("seakr_")]
    assert len(decisions) >= 6  # every phase of the trace, as custom events under the chain run


async def test_async_paths_do_not_block_the_event_loop():
    def slow(prompt, config):
        time.sleep(0.05)
        return eiffel(prompt, config)

    seakr_chain = chain(llm=ScriptedBackend(slow))
    ticks = 0

    async def ticker():
        nonlocal ticks
        while True:
            await asyncio.sleep(0.01)
            ticks += 1

    task = asyncio.create_task(ticker())
    started = time.perf_counter()
    answer = await seakr_chain.ainvoke("Which country is the Eiffel Tower in?")
    elapsed = time.perf_counter() - started
    chunks = [c async for c in seakr_chain.astream("Which country is the Eiffel Tower in?")]
    answers = await seakr_chain.abatch(["Which country is the Eiffel Tower in?"] * 2)
    task.cancel()
    assert answer == "France" and "".join(chunks) == "France" and answers == ["France", "France"]
    assert elapsed > 0.2 and ticks >= 10  # the loop kept ticking while the model worked
    kinds = [e["event"] async for e in seakr_chain.astream_events("Which country is the Eiffel Tower in?")]
    assert "on_llm_end" in kinds and "on_retriever_end" in kinds and "on_custom_event" in kinds


def test_drop_in_replacement_for_an_lcel_rag_chain():
    """A typical LCEL RAG chain and SeaKRChain take the same input and give the same output type, and compose the
    same way."""
    retriever = ListRetriever()
    prompt = PromptTemplate.from_template("Context: {context}\nQuestion: {question}\nAnswer:")

    def format_docs(docs):
        return "\n".join(d.page_content for d in docs)

    rag = (
        {"context": retriever | format_docs, "question": RunnablePassthrough()}
        | prompt
        | FakeListLLM(responses=["France"])
        | StrOutputParser()
    )
    adaptive = chain(retriever=retriever)
    question = "Which country is the Eiffel Tower in?"
    before, after = rag.invoke(question), adaptive.invoke(question)
    assert type(before) is type(after) is str and after == "France"
    shout = adaptive | (lambda answer: answer.upper())
    assert shout.invoke(question) == "FRANCE"


def test_chain_errors_are_clear():
    with pytest.raises(RetrievalError, match="Eiffel Tower.*search service down"):
        chain(retriever=ListRetriever(fail=True)).invoke("Which country is the Eiffel Tower in?")
    tolerant = SeaKRChain(
        llm=ScriptedBackend(eiffel),
        retriever=ListRetriever(fail=True),
        config=CONFIG,
        on_retrieval_error="answer_without",
        return_trace=True,
    ).invoke("Which country is the Eiffel Tower in?")
    assert "search service down" in tolerant["trace"]["steps"][0]["error"]
    with pytest.raises(TypeError, match="not a self-aware back-end"):
        SeaKRChain(llm=FakeListChatModel(responses=["x"]), retriever=ListRetriever())
    with pytest.raises(TypeError, match="BaseRetriever"):
        SeaKRChain(llm=ScriptedBackend(eiffel), retriever=object())
    with pytest.raises(ValueError, match="empty"):
        chain().invoke("   ")
    with pytest.raises(ValueError, match="question"):
        chain().invoke({"text": "Which country?"})


# ---------------------------------------------------------------------------------------------- components
def test_gate_skips_when_sure_and_says_why():
    recorder = Recorder()
    sure = UncertaintyGatedRetriever(
        retriever=ListRetriever(), llm=ScriptedBackend(lambda p, c: Reply("It is Paris", 0.0)), config=CONFIG
    )
    assert sure.invoke("capital of France?", config={"callbacks": [recorder]}) == []
    (gate,) = [data for name, data, _ in recorder.events if name == "seakr_gate_decided"]
    assert gate["decision"]["retrieve"] is False and gate["decision"]["reason"] == "confident"
    assert "sure" in gate["decision"]["explanation"] and gate["decision"]["generation"] == "It is Paris"
    decision = sure.decide("capital of France?")
    assert not decision.retrieve and decision.documents == [] and decision.assessment.uncertainty.value < CONFIG.delta


def test_gate_retrieves_when_unsure_and_records_the_uncertainty():
    unsure = UncertaintyGatedRetriever(
        retriever=ListRetriever(), llm=ScriptedBackend(lambda p, c: Reply("Maybe Lyon", 1.0)), config=CONFIG, k=2
    )
    docs = unsure.invoke("capital of France?")
    assert [d.id for d in docs] == ["p1", "p2"]
    assert docs[0].metadata["source"] == "wiki" and docs[0].metadata["seakr_gate_uncertainty"] > CONFIG.delta
    assert docs[0].metadata["seakr_gate_retrieve"] is True and docs[0].metadata["seakr_gate_reason"] == "uncertain"
    assert len(unsure.invoke("capital of France?", k=1)) == 1
    always = UncertaintyGatedRetriever(retriever=ListRetriever(), llm=ScriptedBackend(eiffel), always_retrieve=True)
    assert len(always.invoke("q", k=3)) == 3


def test_gate_errors_are_clear():
    backend = ScriptedBackend(lambda p, c: Reply("Maybe", 1.0))
    with pytest.raises(RetrievalError, match="ListRetriever failed for query 'q\\?'.*search service down"):
        UncertaintyGatedRetriever(retriever=ListRetriever(fail=True), llm=backend, config=CONFIG).invoke("q?")
    with pytest.raises(ValueError, match="empty"):
        UncertaintyGatedRetriever(retriever=ListRetriever(), llm=backend).invoke(" ")
    with pytest.raises(ValidationError, match="k=0"):
        UncertaintyGatedRetriever(retriever=ListRetriever(), llm=backend, k=0)
    with pytest.raises(TypeError, match="not a self-aware back-end"):
        UncertaintyGatedRetriever(retriever=ListRetriever(), llm=FakeListLLM(responses=["x"]))


def test_reranker_orders_by_uncertainty_inside_contextual_compression():
    reranker = SelfAwareReranker(llm=ScriptedBackend(eiffel), config=CONFIG, top_n=2)
    docs = reranker.compress_documents(DOCS, "Which country is the Eiffel Tower in?")
    assert [d.id for d in docs] == ["p2", "p1"]
    assert docs[0].metadata["seakr_search_rank"] == 2 and docs[0].metadata["source"] == "wiki"
    assert docs[0].metadata["relevance_score"] > docs[1].metadata["relevance_score"]
    assert docs[0].metadata["relevance_score"] == -docs[0].metadata["seakr_uncertainty"]
    compression = ContextualCompressionRetriever(base_compressor=reranker, base_retriever=ListRetriever())
    recorder = Recorder()
    assert [
        d.id for d in compression.invoke("Which country is the Eiffel Tower in?", config={"callbacks": [recorder]})
    ] == [
        "p2",
        "p1",
    ]
    assert any(e[0] == "llm_start" for e in recorder.events)  # the scoring call is visible to tracers
    with pytest.raises(ValidationError, match="top_n=0"):
        SelfAwareReranker(llm=ScriptedBackend(eiffel), top_n=0)
    with pytest.raises(ValueError, match="empty"):
        reranker.compress_documents(DOCS, "")
    assert reranker.compress_documents([], "q?") == []


def test_models_reject_what_they_cannot_do():
    with pytest.raises(ValidationError, match="not a self-aware back-end"):
        ChatSeaKR(backend=FakeListChatModel(responses=["x"]))
    with pytest.raises(ValidationError, match="unknown model"):
        SeaKRLLM(model="gpt-4o")
    with pytest.raises(ValidationError, match="k=1"):
        ChatSeaKR(model="smollm2-135m-instruct", k=1)
    with pytest.raises(TypeError, match="unexpected keyword argument 'organization'"):
        ChatSeaKR(model="smollm2-135m-instruct", organization="sk-nothing")
    with pytest.raises(ValidationError, match="pass its base_url too") as raised:
        ChatSeaKR(model="smollm2-135m-instruct", api_key="sk-nothing")
    assert "sk-nothing" not in str(raised.value)
    with pytest.raises(ValidationError, match="estimator"):
        ChatSeaKR(model="smollm2-135m-instruct", estimator="vibes")
    with pytest.raises(ValidationError, match="search"):
        PassageIndexRetriever(index=object())


def test_llm_and_chat_report_uncertainty_samples_and_logprobs():
    backend = ScriptedBackend(lambda p, c: Reply("Paris", 0.3, sample_text="Lyon"))
    llm = SeaKRLLM(backend=backend, k=4, max_tokens=5)
    result = llm.generate(["The capital of France is"])
    greedy, *samples = result.generations[0]
    assert greedy.text == "Paris" and [s.text for s in samples] == ["Lyon"] * 4
    info = greedy.generation_info
    assert info["uncertainty"]["estimator"] == "eigenscore" and info["uncertainty"]["value"] > -6
    assert len(info["logprobs"]["token_logprobs"]) == len(info["logprobs"]["token_ids"]) > 0
    assert llm.invoke("The capital of France is") == "Paris"
    assert result.llm_output["token_usage"]["completion_tokens"] > 0
    chat = ChatSeaKR(backend=backend, k=4, max_tokens=5)
    message = chat.invoke("Capital of France?")
    assert message.content == "Paris" and message.response_metadata["samples"] == ["Lyon"] * 4
    sample_tokens = sum(len(s.generation_info["logprobs"]["token_ids"]) for s in samples)
    assert message.usage_metadata["output_tokens"] == info["greedy_tokens"] + sample_tokens
    with pytest.raises(ValueError, match="image"):
        chat.invoke([{"role": "user", "content": [{"type": "image", "url": "http://127.0.0.1/x.png"}]}])
    with pytest.raises(ValueError, match="tool"):
        from langchain_core.messages import ToolMessage

        chat.invoke([ToolMessage("42", tool_call_id="1")])


async def test_concurrent_ainvokes_take_turns_on_the_backend_and_share_batches():
    def slow(prompt, config):
        time.sleep(0.02)
        return eiffel(prompt, config)

    backend = ScriptedBackend(slow)
    seakr_chain = chain(llm=backend)
    questions = [f"Which country is the Eiffel Tower in, version {i}?" for i in range(4)]
    answers = await asyncio.gather(*(seakr_chain.ainvoke(q) for q in questions))
    assert answers == ["France"] * 4
    # four questions, each needing several calls: threads never enter the back-end together, and calls that
    # arrive while it is busy are merged into one batch
    assert max(len({parse(p)[0] for p, _ in batch}) for batch in backend.batches) > 1


def test_a_chains_dump_shows_the_settings_flat_and_reads_back():
    seakr_chain = chain()
    dumped = seakr_chain.model_dump()["config"]
    assert dumped["k"] == CONFIG.k and "sampling" not in dumped  # as SeaKRConfig.to_dict writes it
    again = SeaKRChain(llm=seakr_chain.llm, retriever=seakr_chain.retriever, config=dumped)
    assert again.config == CONFIG
