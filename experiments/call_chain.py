"""How long each question's chain of dependent engine requests is, from a results file's traces.

With few questions in progress, a question's seconds follow the requests it must wait for one after another more
than the work in them.  For the default SeaKR (the gate's token cascade before samples, the first search result
kept, final samples only where the two answers differ) a question waits, in order, for:

* each round's greedy step;
* the step's samples, where the cascade left it to them, then the samples' read-outs (two waits);
* after a search, the step written again with the new passage;
* the final answers (both in one wait), the call asking again with " So the answer is" when one stated none, and,
  when the two answers differ, their samples and read-outs (two waits).

A baseline's calls each wait for the one before, so its chain is its LM calls.  From the repository's root:

    python experiments/call_chain.py runs/results/hotpotqa_dev/seakr.jsonl \
        runs/results/hotpotqa_dev/single-retrieval.jsonl
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path


def sampled(reading: dict | None) -> bool:
    """Whether a traced uncertainty was read from samples (the gate's last stage, or a final answer's)."""
    return bool(reading and reading.get("num_samples"))


def written_after_search(step: dict) -> bool:
    """Whether a traced round wrote its step again with a passage it kept (a candidate with a generation)."""
    return any(c.get("generation") for c in step.get("candidates") or [])


def seakr_chain(trace: dict) -> Counter:
    """The waits of one SeaKR question, by kind."""
    waits: Counter = Counter()
    for step in trace["steps"]:
        waits["greedy step"] += 1
        if sampled(step.get("uncertainty")):
            waits["samples and read-outs"] += 2
        if written_after_search(step):
            waits["step written after a search"] += 1
    finals = trace.get("finals") or {}
    if finals and "stated" not in finals:
        waits["final answers"] += 1
        waits["asking again"] += any(f.get("forced") for f in finals.values())
        waits["final samples and read-outs"] += 2 * any(sampled(f.get("uncertainty")) for f in finals.values())
    return waits


def main() -> None:
    for path in map(Path, sys.argv[1:]):
        header, *lines = path.read_text().splitlines()
        rows = [json.loads(line) for line in lines if line.strip()]
        if not rows:
            continue
        if not json.loads(header)["config"]["method"].startswith("seakr"):  # a baseline: each call waits for the last
            mean = sum(r["lm_calls"] for r in rows) / len(rows)
            print(f"{path}: {len(rows)} questions, {mean:.2f} dependent requests per question (its LM calls)")
            continue
        total: Counter = Counter()
        for r in rows:
            total.update(seakr_chain(r["trace"]))
        n = len(rows)
        parts = ", ".join(f"{kind} {count / n:.2f}" for kind, count in total.most_common())
        print(f"{path}: {n} questions, {sum(total.values()) / n:.2f} dependent requests per question ({parts})")


if __name__ == "__main__":
    main()
