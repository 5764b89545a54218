"""An LCEL RAG chain on one `seakr serve` server: `ChatOpenAI` answers, SeaKR's gate and re-ranker pick the context.

The chain is the ordinary retrieve-then-answer LCEL chain with `ChatOpenAI` on the server's OpenAI routes.  SeaKR
enters as two components on `base_url=` (the server's self-aware routes), with no torch in the app's venv:
`UncertaintyGatedRetriever` searches only when the model is unsure of the question, and `SelfAwareReranker` keeps
the passage after which it is surest.  The gate's decision reaches the callbacks as the custom event
`seakr_gate_decided` (as `astream_events` or LangSmith show it), the self-aware calls as LLM runs, and the
re-ranker's scores travel on the kept documents (`seakr_uncertainty`), returned with the answer.

Run: `python chain_app.py http://127.0.0.1:8000` (`SEAKR_API_KEY` for a server started with `--api-key`).
"""

from __future__ import annotations

import argparse
import json
import os
from typing import Any

from apps_common import QUESTIONS, Decisions, judge
from langchain_core.documents import Document
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import RunnableConfig, RunnableLambda, RunnablePassthrough
from langchain_openai import ChatOpenAI

from langchain_seakr import PassageIndexRetriever, SelfAwareReranker, UncertaintyGatedRetriever
from seakr_integrations import SeaKRConfig

PROMPT = ChatPromptTemplate.from_template("Answer in a few words.\n\nContext:\n{context}\n\nQuestion: {question}")


def run(url: str, *, model: str = "smollm2", api_key: str | None = None, config: SeaKRConfig | None = None) -> dict:
    """Run the chain on each of ``QUESTIONS``; its answers and SeaKR's decisions as the callbacks saw them.

    ``config`` sets SeaKR's sampling and gate (default ``SeaKRConfig.light()``, the CPU preset).
    """
    llm, config = judge(url, api_key, config)
    gated = UncertaintyGatedRetriever(retriever=PassageIndexRetriever.demo(k=3), llm=llm, config=config)
    reranker = SelfAwareReranker(llm=llm, config=config, top_n=1)

    def keep_surest(inputs: dict[str, Any], config: RunnableConfig) -> list[Document]:
        return reranker.compress_documents(inputs["docs"], inputs["question"], callbacks=config.get("callbacks"))

    def fill(inputs: dict[str, Any]) -> dict[str, str]:
        context = "\n\n".join(doc.page_content for doc in inputs["kept"]) or "(none)"
        return {"context": context, "question": inputs["question"]}

    answering = ChatOpenAI(
        base_url=f"{url}/v1", api_key=api_key or "none", model=model, temperature=0, max_tokens=48, timeout=600
    )
    # the usual "RAG with its sources" chain: the kept passages travel with the answer
    chain = (
        {"docs": gated, "question": RunnablePassthrough()}
        | RunnablePassthrough.assign(kept=RunnableLambda(keep_surest))
        | RunnablePassthrough.assign(answer=RunnableLambda(fill) | PROMPT | answering | StrOutputParser())
    )
    out = {}
    for kind, question in QUESTIONS.items():
        decisions = Decisions()
        result = chain.invoke(question, config={"callbacks": [decisions]})
        gate = next(data["decision"] for name, data in decisions.events if name == "seakr_gate_decided")
        out[kind] = {
            "question": question,
            "answer": result["answer"],
            "retrieve": gate["retrieve"],
            "explanation": gate["explanation"],
            # the re-ranker's scores are on the documents it keeps, as LangChain re-rankers put relevance_score
            "kept": [
                {"title": d.metadata.get("title"), "seakr_uncertainty": d.metadata.get("seakr_uncertainty")}
                for d in result["kept"]
            ],
            "events": [name for name, _ in decisions.events],
        }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("url", help="the seakr serve server, e.g. http://127.0.0.1:8000")
    parser.add_argument("--model", default="smollm2", help="the model name the server serves")
    args = parser.parse_args()
    print(json.dumps(run(args.url, model=args.model, api_key=os.environ.get("SEAKR_API_KEY")), indent=1))


if __name__ == "__main__":
    main()
