"""Benchmark ``SeaKR.answer_many`` against answering the same questions one at a time, on vLLM (CPU).

Both runs use one engine, the same index and SeaKR's default settings (k=20, 100 tokens, 10 exemplars, N=3), on
the first N HotpotQA questions of data/.  The sequential run goes first, so the batched run cannot be
helped by a prefix cache the sequential one did not also have (exemplar prefixes are cached after the first call
either way).  Prints one JSON line: wall times, per-question medians, answers and decisions that agree.

    python bench/answer_many.py --questions 20 --save together.json

``--runs together`` skips the sequential run; ``--save FILE`` writes each question's answer and decisions (per
step: the gate's decision and the passage kept; the final strategy), and ``--compare FILE`` counts how many agree
with another run's saved file (e.g. the same command run on an earlier version of the driver).  Only the public
API is used, so the script runs unchanged against another checkout with that API (``PYTHONPATH=that/checkout``).

Results go to docs/benchmarks.md together with this command and the machine.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parents[1] / "data"


def decisions(result: Any) -> dict[str, Any]:
    """What SeaKR decided for one question, in a form two runs can be compared on."""
    return {
        "answer": result.answer,
        "strategy": result.strategy,
        "stop_reason": result.stop_reason,
        "steps": [[s.decision, s.query, s.chosen_passage_id] for s in result.steps],
    }


def agreement(ours: list[dict[str, Any]], theirs: list[dict[str, Any]]) -> dict[str, int]:
    pairs = list(zip(ours, theirs, strict=True))
    return {
        "same_answer": sum(a["answer"] == b["answer"] for a, b in pairs),
        "same_decisions": sum(a["steps"] == b["steps"] and a["strategy"] == b["strategy"] for a, b in pairs),
        "same_first_decision": sum(a["steps"][:1] == b["steps"][:1] for a, b in pairs),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--questions", type=int, default=20)
    parser.add_argument("--model", default="smollm2-135m-instruct")
    parser.add_argument("--dtype", default="auto")
    parser.add_argument("--max-in-flight", type=int, default=32)
    parser.add_argument("--runs", default="sequential,together", help="which runs: sequential, together or both")
    parser.add_argument("--save", type=Path, help="write each question's answer and decisions (together run) here")
    parser.add_argument("--compare", type=Path, help="count agreement with decisions saved by another run")
    args = parser.parse_args()
    runs = set(args.runs.split(","))
    os.environ.setdefault("VLLM_LOGGING_LEVEL", "WARNING")
    os.environ.setdefault("VLLM_LOGGING_STREAM", "ext://sys.stderr")  # stdout carries the JSON result only

    import seakr_integrations
    from seakr_integrations.backends.vllm import VLLMBackend
    from seakr_integrations.reasoning import SeaKR, SeaKRConfig
    from seakr_integrations.retrieval.bm25 import BM25Index

    questions = [json.loads(line)["question"] for line in (DATA / "hotpotqa_dev.jsonl").open()][: args.questions]
    record: dict[str, Any] = {"questions": len(questions), "model": args.model, "dtype": args.dtype}
    record["code"] = str(Path(seakr_integrations.__file__).resolve().parents[1])
    with tempfile.TemporaryDirectory() as tmp:
        index = BM25Index.build(DATA / "corpus_hotpotqa.jsonl", Path(tmp) / "index", progress=False)
        backend = VLLMBackend(args.model, dtype=args.dtype)
        seakr = SeaKR(backend, index, SeaKRConfig())
        alone: list[Any] = []
        if "sequential" in runs:
            per_question = []
            started = time.perf_counter()
            for q in questions:
                t = time.perf_counter()
                alone.append(seakr.answer(q))
                per_question.append(time.perf_counter() - t)
            record["sequential_s"] = round(time.perf_counter() - started, 1)
            record["sequential_median_question_s"] = round(statistics.median(per_question), 2)
        if "together" in runs:
            started = time.perf_counter()
            together = seakr.answer_many(questions, max_in_flight=args.max_in_flight)
            record["together_s"] = round(time.perf_counter() - started, 1)
            record["lm_prompts"] = sum(r.lm_calls for r in together)
            ours = [decisions(r) for r in together]
            if alone:
                record["speedup"] = round(record["sequential_s"] / record["together_s"], 2)
                record["vs_sequential"] = agreement(ours, [decisions(r) for r in alone])
            if args.save:
                args.save.write_text(json.dumps(ours, indent=1))
            if args.compare:
                record["vs_" + args.compare.stem] = agreement(ours, json.loads(args.compare.read_text()))
        backend.close()
    record["machine"] = f"{platform.machine()}, {os.cpu_count()} cores, Python {sys.version.split()[0]}"
    print(json.dumps(record))


if __name__ == "__main__":
    main()
