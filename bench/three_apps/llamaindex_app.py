"""A LlamaIndex app on one `seakr serve` server: `OpenAILike` answers, SeaKR's components decide on the same server.

This is how a LlamaIndex app usually reaches a vLLM server: `OpenAILike` on its OpenAI routes.  The app keeps that
LLM for its answers and adds SeaKR through `base_url=` on the same server, with no torch in the app's venv:

1. a stock `RetrieverQueryEngine` whose answering LLM is `OpenAILike`, with `SelfAwareReranker` as its node
   post-processor: the passage kept is the one after which the server's model is surest;
2. `SeaKRQueryEngine`, SeaKR's whole loop (retrieve only when unsure, keep the surest passage, answer from the
   surer of two chains) over the same retriever.

SeaKR's decisions reach LlamaIndex's instrumentation: `ReRankEndEvent` (each node's `seakr_uncertainty`) and one
`SeaKRPhaseEvent` per phase of the loop; `Decisions` collects them as any event handler would.

Run: `python llamaindex_app.py http://127.0.0.1:8000` (`SEAKR_API_KEY` for a server started with `--api-key`).
"""

from __future__ import annotations

import argparse
import json
import os
from typing import Any

from llama_index.core.bridge.pydantic import Field
from llama_index.core.instrumentation import get_dispatcher
from llama_index.core.instrumentation.event_handlers import BaseEventHandler
from llama_index.core.instrumentation.events import BaseEvent
from llama_index.core.instrumentation.events.rerank import ReRankEndEvent
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.llms.openai_like import OpenAILike

from llamaindex_seakr import PassageRetriever, SeaKRLLM, SeaKRPhaseEvent, SeaKRQueryEngine, SelfAwareReranker
from seakr_integrations import SeaKRConfig
from seakr_integrations.demo import demo_index

QUESTION = "The author of Sexual Politics attended which British University?"  # gold: Oxford


class Decisions(BaseEventHandler):
    """Keeps SeaKR's instrumentation events (re-rankings and the loop's phases), as a tracing handler would."""

    events: list[BaseEvent] = Field(default_factory=list)

    @classmethod
    def class_name(cls) -> str:
        return "Decisions"

    def handle(self, event: BaseEvent, **kwargs: Any) -> None:
        if isinstance(event, (ReRankEndEvent, SeaKRPhaseEvent)):
            self.events.append(event)


def run(url: str, question: str = QUESTION, *, api_key: str | None = None, config: SeaKRConfig | None = None) -> dict:
    """Answer ``question`` both ways against the server at ``url``; the answers and decisions as a dict.

    ``config`` sets SeaKR's sampling and loop (default ``SeaKRConfig.light()``, the CPU preset).
    """
    config = config or SeaKRConfig.light()
    # SeaKR's side: the self-aware model on the server (seakr's routes); its context window comes from the server
    seakr_llm = SeaKRLLM(base_url=url, api_key=api_key, k=config.k, max_tokens=config.max_tokens)
    # the app's own LLM: the same model through the server's OpenAI routes, as LlamaIndex apps reach vLLM
    answering = OpenAILike(
        api_base=f"{url}/v1",
        api_key=api_key or "none",
        model=seakr_llm.model_name,
        is_chat_model=True,
        context_window=seakr_llm.context_window,
        max_tokens=32,
        temperature=0.0,
        timeout=600,
    )
    retriever = PassageRetriever(demo_index(progress=False), top_k=3)
    decisions = Decisions()
    get_dispatcher().add_event_handler(decisions)
    try:
        reranker = SelfAwareReranker(seakr_llm, top_n=1, config=config)
        engine = RetrieverQueryEngine.from_args(retriever, llm=answering, node_postprocessors=[reranker])
        plain = engine.query(question)
        reranked = [e for e in decisions.events if isinstance(e, ReRankEndEvent)]
        looped = SeaKRQueryEngine(retriever, seakr_llm, config).query(question)
        phases = [e for e in decisions.events if isinstance(e, SeaKRPhaseEvent)]
    finally:
        get_dispatcher().event_handlers.remove(decisions)
    return {
        "question": question,
        "openai_like": {
            "answer": str(plain).strip(),
            "kept": [_node(n) for n in plain.source_nodes],
            "rerank_events": [[_node(n) for n in e.nodes] for e in reranked],
        },
        "seakr_query_engine": {
            "answer": looped.response,
            "strategy": looped.metadata["strategy"],
            "kept": [_node(n) for n in looped.source_nodes],
            "phases": [_phase(e) for e in phases],
        },
    }


def _node(node: Any) -> dict:
    meta = node.node.metadata
    return {"title": meta.get("title"), "seakr_uncertainty": meta.get("seakr_uncertainty")}


def _phase(event: SeaKRPhaseEvent) -> dict:
    """The decision each phase records, in a line's worth of JSON (the step's gate decision, the search, the kept
    passage, the final answer)."""
    data, out = event.data, {"kind": event.kind}
    step = data.get("step") or {}
    if step:
        uncertainty = step.get("uncertainty") or {}
        out |= {"step": step.get("index"), "decision": step.get("decision"), "reason": step.get("reason")}
        out |= {"uncertainty": uncertainty.get("value"), "query": step.get("query")}
    out |= {k: data[k] for k in ("query", "chosen_passage_id", "strategy", "answer") if k in data}
    return {k: v for k, v in out.items() if v is not None}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("url", help="the seakr serve server, e.g. http://127.0.0.1:8000")
    parser.add_argument("--question", default=QUESTION)
    args = parser.parse_args()
    out = run(args.url, args.question, api_key=os.environ.get("SEAKR_API_KEY"))
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
