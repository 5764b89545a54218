"""The agent benchmark: a LangChain v1 agent that reads what SeaKR's loop kept (``SeaKRMiddleware``) against the same
agent reading one plain search (the question's top passages, in the same place of its system message).

Both agents have the same model (the bundled model in-process on vLLM, or ``--server URL``), the same system
prompt, the same context template and the same answer step; only what fills the context differs, so a lead
measures SeaKR's retrieval.  For each dataset, 60 questions of ``data/`` (HotpotQA lines 8-67, 2Wiki lines 0-59: the
lines the shipped profiles were not calibrated on), ``--in-flight`` at once.  Per method: F1, EM, LM calls,
generated tokens, searches and seconds per question, and SeaKR minus plain with a paired bootstrap interval.

    python bench/agents.py --out bench/results/agents          # both datasets, 60 questions each
    python bench/agents.py --datasets hotpotqa --limit 10      # a quick look
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path
from typing import Any

from langchain.agents import create_agent
from langchain.agents.middleware import AgentMiddleware, ModelRequest
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import SystemMessage

from langchain_seakr import ChatSeaKR, PassageIndexRetriever, SeaKRMiddleware
from langchain_seakr.agent_gate import DEFAULT_CONTEXT_TEMPLATE
from seakr_integrations.backends.loading import load_backend
from seakr_integrations.cli.questions import resolve_dataset
from seakr_integrations.demo import cached_index
from seakr_integrations.evaluation.questions import read_questions
from seakr_integrations.evaluation.scoring import score
from seakr_integrations.evaluation.summary import bootstrap_interval
from seakr_integrations.models import REFERENCE_BACKEND, REFERENCE_MODEL, default_dtype
from seakr_integrations.reasoning.config import SeaKRConfig

FIRST_LINE = {"hotpotqa": 8, "2wiki": 0}
SYSTEM = "Reply with the answer only: a name, a date, a number or a few words, never a sentence."


class OneSearch(AgentMiddleware):
    """The plain agent's retrieval: the question's top ``k`` passages, shown as ``SeaKRMiddleware`` shows its own."""

    def __init__(self, retriever: PassageIndexRetriever) -> None:
        super().__init__()
        self.retriever = retriever

    def wrap_model_call(self, request: ModelRequest, handler: Any) -> Any:
        question = next(m.text for m in reversed(request.messages) if m.type == "human")
        docs = self.retriever.invoke(question)
        shown = "\n\n".join(f"{d.metadata.get('title') or ''}: {d.page_content}".lstrip(": ") for d in docs)
        system = f"{request.system_message.text}\n\n" if request.system_message is not None else ""
        context = DEFAULT_CONTEXT_TEMPLATE.format(passages=shown)
        return handler(request.override(system_message=SystemMessage(content=system + context)))


class Cost(BaseCallbackHandler):
    """LM calls (one per prompt, SeaKR's and the agent model's alike) and generated tokens of one question."""

    def __init__(self) -> None:
        self.calls = 0
        self.tokens = 0

    def on_chat_model_start(self, serialized: Any, messages: list, **kwargs: Any) -> None:
        self.calls += len(messages)

    def on_llm_start(self, serialized: Any, prompts: list, **kwargs: Any) -> None:
        self.calls += len(prompts)

    def on_llm_end(self, response: Any, **kwargs: Any) -> None:
        usage = (response.llm_output or {}).get("token_usage") or {}
        if usage:
            self.tokens += int(usage.get("completion_tokens") or 0)
            return
        for generations in response.generations:  # a chat model's own run: the messages' usage
            for g in generations:
                used = getattr(getattr(g, "message", None), "usage_metadata", None) or {}
                self.tokens += int(used.get("output_tokens") or 0)


def run_method(agent: Any, questions: list, in_flight: int, searches_of: Any) -> tuple[list[dict], float]:
    """Every question through ``agent`` (``in_flight`` at once); one record each, and the wall time in seconds."""
    costs = [Cost() for _ in questions]
    inputs = [{"messages": [("user", q.question)]} for q in questions]
    configs = [{"callbacks": [c], "max_concurrency": in_flight} for c in costs]
    started = time.perf_counter()
    states = agent.batch(inputs, configs, return_exceptions=True)
    wall = time.perf_counter() - started
    records = []
    for q, state, cost in zip(questions, states, costs, strict=True):
        if isinstance(state, Exception):
            records.append({"id": q.id, "error": f"{type(state).__name__}: {state}"})
            continue
        answer = state["messages"][-1].text
        s = score(answer, q.answers)
        records.append(
            {
                "id": q.id,
                "answer": answer,
                "f1": s.f1,
                "em": s.em,
                "lm_calls": cost.calls,
                "generated_tokens": cost.tokens,
                "searches": searches_of(state),
            }
        )
    return records, wall


def summary(name: str, records: list[dict], wall: float) -> dict[str, Any]:
    done = [r for r in records if "error" not in r]
    mean = {k: statistics.mean(r[k] for r in done) for k in ("f1", "em", "lm_calls", "generated_tokens", "searches")}
    return {
        "method": name,
        "questions": len(done),
        "failed": len(records) - len(done),
        **mean,
        "seconds": wall / max(len(records), 1),
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--datasets", nargs="+", default=["hotpotqa", "2wiki"], choices=sorted(FIRST_LINE))
    p.add_argument("--limit", type=int, default=60, help="questions per dataset (default 60)")
    p.add_argument("--in-flight", type=int, default=8, help="questions answered at once (default 8)")
    p.add_argument("--server", help="a seakr serve URL; default: the bundled model in-process on vLLM")
    p.add_argument("--out", type=Path, default=Path("bench/results/agents"), help="folder for the records")
    args = p.parse_args()
    if args.server:
        judge, answerer = ChatSeaKR(base_url=args.server), ChatSeaKR(base_url=args.server, k=2, max_tokens=32)
    else:
        backend = load_backend(REFERENCE_BACKEND, REFERENCE_MODEL, dtype=default_dtype(REFERENCE_MODEL))
        judge, answerer = ChatSeaKR(backend=backend), ChatSeaKR(backend=backend, k=2, max_tokens=32)
    args.out.mkdir(parents=True, exist_ok=True)
    table = []
    for ds in args.datasets:
        files = resolve_dataset(ds)
        questions = read_questions(files.questions).questions[FIRST_LINE[ds] : FIRST_LINE[ds] + args.limit]
        retriever = PassageIndexRetriever(index=cached_index(files.corpus), k=3)
        config = SeaKRConfig(exemplar_style=ds)
        seakr = create_agent(
            answerer, system_prompt=SYSTEM, middleware=[SeaKRMiddleware(llm=judge, config=config, retriever=retriever)]
        )
        plain = create_agent(answerer, system_prompt=SYSTEM, middleware=[OneSearch(retriever)])
        runs = {
            "seakr-agent": run_method(seakr, questions, args.in_flight, lambda s: s["seakr_gathered"]["searches"]),
            "plain-agent": run_method(plain, questions, args.in_flight, lambda s: 1),
        }
        for name, (records, wall) in runs.items():
            (args.out / f"{ds}-{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
            table.append({"dataset": ds, **summary(name, records, wall)})
        paired = [
            a["f1"] - b["f1"]
            for a, b in zip(runs["seakr-agent"][0], runs["plain-agent"][0], strict=True)
            if "error" not in a and "error" not in b
        ]
        low, high = bootstrap_interval(paired)
        table.append(
            {
                "dataset": ds,
                "method": "seakr minus plain, F1",
                "difference": statistics.mean(paired),
                "low": low,
                "high": high,
            }
        )
    (args.out / "summary.json").write_text(json.dumps(table, indent=1))
    for row in table:
        print(json.dumps(row))


if __name__ == "__main__":
    main()
