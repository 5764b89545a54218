"""The ``answer-alone`` rule on the real model, as the README's snippets run it: SmolLM2-135M-Instruct
(transformers, CPU), ``SeaKRConfig.light()``'s sizes, the bundled demo index.

"How many legs does a spider have?": SmolLM2 writes "8" as its final generation, with no "So the answer is".
Asked " So the answer is" after it (the authors' rule for a chain that states no answer), it copied the last of
the light preset's four exemplars and answered "no"; ``answer-alone`` reads a generation that is the answer alone
as it is.  The paper's decisions are used here: the light preset's default rules search the question first and
answer from the kept passages, and the demo index holds no passage about spiders, so SmolLM2 answers from three
off-topic ones ("1"; docs/decision_rules.md, "What the default loop does not do yet").  Slow: about a minute per
framework on two cores."""

from __future__ import annotations

import pytest

from langchain_seakr import ChatSeaKR, PassageIndexRetriever, SeaKRChain
from llamaindex_seakr import PassageRetriever, SeaKRLLM, SeaKRQueryEngine
from seakr_integrations.demo import demo_index
from seakr_integrations.reasoning import SeaKRConfig

pytestmark = pytest.mark.slow

LIGHT = SeaKRConfig.light(rules="paper,answer-alone")
SPIDER = "How many legs does a spider have?"


def test_answer_alone_reads_8_legs_in_seakr_chain(hf_smollm2):
    chat = ChatSeaKR(backend=hf_smollm2, k=LIGHT.k, max_tokens=LIGHT.max_tokens)
    chain = SeaKRChain(retriever=PassageIndexRetriever.demo(k=3), llm=chat, config=LIGHT, return_trace=True)
    out = chain.invoke(SPIDER)
    final = out["trace"]["finals"][out["strategy"]]
    assert out["answer"] == "8" and not final["forced"], final


def test_answer_alone_reads_8_legs_in_seakr_query_engine(hf_smollm2):
    llm = SeaKRLLM(backend=hf_smollm2, k=LIGHT.k, max_tokens=LIGHT.max_tokens)
    response = SeaKRQueryEngine(PassageRetriever(demo_index(progress=False), top_k=3), llm, LIGHT).query(SPIDER)
    assert response.response == "8", response.metadata["trace"]["finals"]
