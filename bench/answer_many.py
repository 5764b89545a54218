"""Benchmark ``SeaKR.answer_many`` against answering the same questions one at a time, on vLLM (CPU).

Both runs use one engine, the same index and SeaKR's default settings (k=20, 100 tokens, 10 exemplars, N=3), on
the first N HotpotQA questions of ../shared/data.  The sequential run goes first, so the batched run cannot be
helped by a prefix cache the sequential one did not also have (exemplar prefixes are cached after the first call
either way).  Prints one JSON line: wall times, per-question medians, back-end calls, answers that agree.

    python bench/answer_many.py --questions 20

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

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--questions", type=int, default=20)
    parser.add_argument("--model", default="smollm2-135m-instruct")
    parser.add_argument("--dtype", default="auto")
    parser.add_argument("--max-in-flight", type=int, default=32)
    args = parser.parse_args()
    os.environ.setdefault("VLLM_LOGGING_LEVEL", "WARNING")
    os.environ.setdefault("VLLM_LOGGING_STREAM", "ext://sys.stderr")  # stdout carries the JSON result only

    from seakr_integrations.backends.vllm import VLLMBackend
    from seakr_integrations.reasoning import SeaKR, SeaKRConfig
    from seakr_integrations.retrieval.bm25 import BM25Index

    questions = [json.loads(line)["question"] for line in (DATA / "hotpotqa_dev.jsonl").open()][: args.questions]
    with tempfile.TemporaryDirectory() as tmp:
        index = BM25Index.build(DATA / "corpus_hotpotqa.jsonl", Path(tmp) / "index", progress=False)
        backend = VLLMBackend(args.model, dtype=args.dtype)
        calls: list[int] = []
        generate = backend.generate

        def counting(prompts, config=None, **kw):  # noqa: ANN001, ANN202
            calls.append(len(prompts))
            return generate(prompts, config, **kw)

        backend.generate = counting  # type: ignore[method-assign]
        seakr = SeaKR(backend, index, SeaKRConfig())

        per_question = []
        started = time.perf_counter()
        alone = []
        for q in questions:
            t = time.perf_counter()
            alone.append(seakr.answer(q))
            per_question.append(time.perf_counter() - t)
        sequential_s = time.perf_counter() - started
        sequential_calls = len(calls)

        calls.clear()
        started = time.perf_counter()
        together = seakr.answer_many(questions, max_in_flight=args.max_in_flight)
        batched_s = time.perf_counter() - started
        backend.close()

    record = {
        "questions": len(questions),
        "model": args.model,
        "dtype": args.dtype,
        "sequential_s": round(sequential_s, 1),
        "sequential_median_question_s": round(statistics.median(per_question), 2),
        "sequential_backend_calls": sequential_calls,
        "batched_s": round(batched_s, 1),
        "batched_backend_calls": len(calls),
        "batched_median_prompts_per_call": statistics.median(calls),
        "speedup": round(sequential_s / batched_s, 2),
        "lm_prompts": sum(r.lm_calls for r in together),
        "same_answer": sum(a.answer == b.answer for a, b in zip(alone, together, strict=True)),
        "same_trace": sum(a.to_dict() == b.to_dict() for a, b in zip(alone, together, strict=True)),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {sys.version.split()[0]}",
    }
    print(json.dumps(record))


if __name__ == "__main__":
    main()
