"""The loop's limits chosen by cross-validation (docs/cv_protocol.md, "Amendment: the step limit under the cost
target" and "Amendment: the passage limit under the cost target").

A run with a lower ``max_steps`` (or ``max_docs``) makes exactly the calls of the run as made until the round where
its number of accepted steps (kept passages) reaches the limit; only its final answers differ. So each candidate limit
is evaluated by generating the final stage anew (``SeaKRLoop.finish``, the library's own) on the steps and passages
the held-out runs' traces (``runs/cv/DATASET_dev/foldJ/seakr-both-finals.jsonl``) had at that round; a question the
limit does not cut keeps its answer as made.  The control (step limit only: it is the same replay for both) generates
the final stage on fold 1's own last states.

    python bench/step_limits.py                    # the step limit's replays (resumable), then the report
    python bench/step_limits.py --limit max_docs   # the passage limit's
    python bench/step_limits.py --report           # the report alone: the nested choice and the held-out estimate

Replays go to ``runs/cv/step_limits.jsonl`` (``passage_limits.jsonl``), the report to ``runs/cv/step_limits.json``
(``passage_limits.json``).
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATASETS = ("hotpotqa", "2wiki")
FOLDS = 5
CONTROL_FOLD = 1
TOLERANCE = 0.01  # 1.0 F1 point


@dataclass(frozen=True)
class Limit:
    """One of the loop's limits under test: its setting, candidates (the last is the runs' own) and files."""

    setting: str
    candidates: tuple[int, ...]
    counted: str  # what a round adds to the count: the trace field that is set when it does
    files: str  # runs/cv/<files>.jsonl (replays) and .json (report)
    words: str  # what the limit counts, for the report

    @property
    def as_made(self) -> int:
        return self.candidates[-1]

    @property
    def replays(self) -> Path:
        return ROOT / "runs" / "cv" / f"{self.files}.jsonl"

    @property
    def report(self) -> Path:
        return ROOT / "runs" / "cv" / f"{self.files}.json"


LIMITS = {
    "max_steps": Limit("max_steps", (3, 4, 5, 6, 7), "accepted", "step_limits", "seven steps"),
    "max_docs": Limit("max_docs", (2, 3, 4, 5), "chosen_passage_id", "passage_limits", "five passages"),
}


def runs(ds: str) -> dict[int, list[dict]]:
    """The held-out runs' rows by fold, without the left-out lines (``cv_report``'s loaders)."""
    from cv_report import LEFT_OUT, all_lines, read

    lines = all_lines(ds)
    folds = {j: read(ROOT / "runs" / "cv" / f"{ds}_dev" / f"fold{j}" / "seakr-both-finals.jsonl") for j in range(FOLDS)}
    return {j: [r for r in rows.values() if lines[r["id"]] not in LEFT_OUT.get(ds, set())] for j, rows in folds.items()}


def cut_round(trace: dict, limit: int, kind: Limit = LIMITS["max_steps"]) -> int | None:
    """The round after which a run with ``kind.setting=limit`` ends, when it ends before the run as made did."""
    counted = 0
    steps = trace["steps"]
    for i, step in enumerate(steps):
        counted += bool(step.get(kind.counted))
        if counted >= limit:
            return i if i < len(steps) - 1 else None
    return None


def state_at(trace: dict, last_round: int) -> tuple[list[str], list[dict]]:
    """The steps and the kept passages after round ``last_round``."""
    rounds = trace["steps"][: last_round + 1]
    steps = [s["accepted"] for s in rounds if s.get("accepted")]
    chosen = {s["chosen_passage_id"] for s in rounds if s.get("chosen_passage_id")}
    return steps, [p for p in trace["passages"] if p["id"] in chosen]


def jobs(ds: str, fold: int, rows: list[dict], done: set[tuple], kind: Limit) -> list[tuple[str | int, dict, int]]:
    """(limit, row, last round) for every cut question of the fold not yet replayed; ``"own"``: the control."""
    out = []
    for row in rows:
        for limit in kind.candidates:
            i = cut_round(row["trace"], limit, kind)
            if i is not None and (ds, fold, row["id"], limit) not in done:
                out.append((limit, row, i))
        if kind.setting == "max_steps" and fold == CONTROL_FOLD and (ds, fold, row["id"], "own") not in done:
            out.append(("own", row, len(row["trace"]["steps"]) - 1))
    return out


def replay(in_flight: int, kind: Limit) -> None:
    from seakr_integrations.backends.loading import load_backend
    from seakr_integrations.cli.common import quiet_vllm_start
    from seakr_integrations.demo import cached_index
    from seakr_integrations.evaluation.scoring import exact_match, f1
    from seakr_integrations.reasoning import SeaKR, SeaKRConfig
    from seakr_integrations.reasoning.driver import Answered, Driver, Failed
    from seakr_integrations.reasoning.records import StopReason
    from seakr_integrations.reasoning.state import QuestionState
    from seakr_integrations.retrieval.passage import Passage

    done = set()
    if kind.replays.exists():
        for line in kind.replays.read_text().splitlines():
            r = json.loads(line)
            done.add((r["dataset"], r["fold"], r["id"], r["limit"]))
    quiet_vllm_start()
    stop = StopReason.STEP_LIMIT if kind.setting == "max_steps" else StopReason.PASSAGE_LIMIT
    with load_backend("vllm", "qwen", dtype="float32") as backend, kind.replays.open("a") as out:
        for ds in DATASETS:
            retriever = cached_index(ROOT / "data" / f"corpus_{ds}.jsonl", progress=False)
            folds = runs(ds)
            for fold in (CONTROL_FOLD, *sorted(set(folds) - {CONTROL_FOLD})):
                rows = folds[fold]
                todo = jobs(ds, fold, rows, done, kind)
                if not todo:
                    continue
                made = rows[0]["trace"]["config"]
                config = SeaKRConfig(
                    k=10,
                    max_tokens=64,
                    exemplar_style=ds,
                    delta=made["delta"],
                    cascade_estimator=made["cascade_estimator"],
                    cascade_band=tuple(made["cascade_band"]),
                )
                seakr = SeaKR(backend, retriever, config)
                states = []
                for index, (_, row, last) in enumerate(todo):
                    steps, passages = state_at(row["trace"], last)
                    state = QuestionState(row["question"].strip(), index)
                    state.steps = list(steps)
                    state.docs = [Passage(p["id"], p["title"], p["text"], p.get("score", 0.0)) for p in passages]
                    states.append(state)
                programs = ((s, seakr.loop.finish(s, stop)) for s in states)
                for item in Driver(backend, retriever, in_flight).run(programs):
                    if not isinstance(item, Answered | Failed):
                        continue  # an event
                    limit, row, last = todo[item.state.index]
                    if isinstance(item, Failed):
                        print(f"{ds} fold {fold} {row['id']} {kind.setting}={limit}: {item.error!r}", flush=True)
                        continue
                    result = item.value
                    record = {
                        "dataset": ds,
                        "fold": fold,
                        "id": row["id"],
                        "limit": limit,
                        "last_round": last,
                        "prediction": result.answer,
                        "f1": f1(result.answer, row["golds"]),
                        "em": exact_match(result.answer, row["golds"]),
                        "final_lm_calls": result.lm_calls,
                        "final_generated_tokens": result.generated_tokens,
                    }
                    out.write(json.dumps(record) + "\n")
                    out.flush()
                print(f"{ds} fold {fold}: {len(todo)} final stages replayed", flush=True)


def loop_calls(steps: list[dict]) -> int:
    """The LM calls of these rounds: each round's greedy step, its samples where the gate drew them, and the step
    written again after a search."""
    from call_chain import sampled, written_after_search

    return sum(1 + sampled(s.get("uncertainty")) + written_after_search(s) for s in steps)


def limited_rows(ds: str, rows: dict[str, dict], kind: Limit, limit: int) -> dict[str, dict]:
    """``rows`` (the runs as made) as a run with ``kind.setting=limit`` gives them: a question the limit cuts gets the
    replayed final answer on its trace cut at that round (its steps, kept passages, stop and LM calls; its tokens and
    seconds stay the run's as made, which overstate it); the others are as made."""
    replays = {}
    for line in kind.replays.read_text().splitlines():
        r = json.loads(line)
        if r["dataset"] == ds and r["limit"] == limit:
            replays[r["id"]] = r
    out = {}
    for qid, row in rows.items():
        last = cut_round(row["trace"], limit, kind)
        if last is None:
            out[qid] = row
            continue
        hit = replays.get(qid)
        if hit is None:
            raise SystemExit(f"{ds} {qid}: no replay for {kind.setting}={limit}: run bench/step_limits.py first")
        _, passages = state_at(row["trace"], last)
        trace = {**row["trace"], "steps": row["trace"]["steps"][: last + 1], "passages": passages}
        trace["stop_reason"] = "passage limit" if kind.setting == "max_docs" else "step limit"
        out[qid] = {
            **row,
            "prediction": hit["prediction"],
            "f1": hit["f1"],
            "em": hit["em"],
            "retrievals": len(passages),
            "lm_calls": loop_calls(trace["steps"]) + hit["final_lm_calls"],
            "trace": trace,
        }
    return out


def as_made_f1(row: dict) -> float:
    """The default's F1 on a run as made.  Fold 0's run (the development run) chose its final answer with margin 0;
    the default's answer is its replay with ``final_margin`` 0.5 and ``answer_with_option`` (the held-out folds'
    files already hold that replay)."""
    if row["trace"]["config"].get("final_margin") == 0.5:
        return row["f1"]
    from option_answers import replayed_answer

    from seakr_integrations.evaluation.scoring import f1

    return f1(replayed_answer(row, 0.5)[1], row["golds"])


def report(kind: Limit) -> dict:
    from cv_report import interval

    replays = defaultdict(dict)
    for line in kind.replays.read_text().splitlines():
        r = json.loads(line)
        replays[(r["dataset"], r["id"])][r["limit"]] = r
    table = {ds: runs(ds) for ds in DATASETS}

    def f1_at(ds: str, row: dict, limit: int) -> float | None:
        if limit == kind.as_made or cut_round(row["trace"], limit, kind) is None:
            return as_made_f1(row)
        hit = replays[(ds, row["id"])].get(limit)
        return None if hit is None else hit["f1"]

    def mean_f1(folds: list[int], limit: int) -> float:
        per_ds = []
        for ds in DATASETS:
            values = [f1_at(ds, r, limit) for j in folds for r in table[ds][j]]
            if any(v is None for v in values):
                raise SystemExit(f"{ds}: replays missing for {kind.setting}={limit}: run without --report first")
            per_ds.append(statistics.mean(values))
        return statistics.mean(per_ds)

    def choose(folds: list[int]) -> tuple[int, dict[int, float]]:
        scores = {limit: mean_f1(folds, limit) for limit in kind.candidates}
        best = max(scores.values())
        return min(limit for limit, s in scores.items() if s >= best - TOLERANCE), scores

    chosen = {}
    for j in range(1, FOLDS):
        limit, scores = choose([k for k in range(FOLDS) if k != j])
        chosen[j] = {kind.setting: limit, "training_f1": scores}
    shipped, all_scores = choose(list(range(FOLDS)))
    held_out = {}
    for ds in DATASETS:
        rows = [(j, r) for j in range(1, FOLDS) for r in table[ds][j]]
        as_made = [as_made_f1(r) for _, r in rows]
        nested = [f1_at(ds, r, chosen[j][kind.setting]) for j, r in rows]
        rounds = []
        for j, r in rows:
            cut = cut_round(r["trace"], chosen[j][kind.setting], kind)
            rounds.append(len(r["trace"]["steps"]) if cut is None else cut + 1)
        held_out[ds] = {
            "questions": len(rows),
            "f1_as_made": statistics.mean(as_made),
            "f1_nested": statistics.mean(nested),
            "difference": statistics.mean(nested) - statistics.mean(as_made),
            "difference_ci": interval([b - a for a, b in zip(as_made, nested, strict=True)]),
            "rounds_as_made": statistics.mean(len(r["trace"]["steps"]) for _, r in rows),
            "rounds_nested": statistics.mean(rounds),
            "per_limit_held_out_f1": {
                limit: statistics.mean(f1_at(ds, r, limit) for _, r in rows) for limit in kind.candidates
            },
        }
    control = {}
    for ds in DATASETS:
        own = [(r, replays[(ds, r["id"])].get("own")) for r in table[ds][CONTROL_FOLD]]
        own = [(r, o) for r, o in own if o is not None]
        control[ds] = {
            "questions": len(own),
            "same_answer": sum(r["prediction"] == o["prediction"] for r, o in own),
            "f1_as_made": statistics.mean(r["f1"] for r, _ in own) if own else None,
            "f1_replayed": statistics.mean(o["f1"] for _, o in own) if own else None,
        }
    summary = {
        "nested_choice": chosen,
        "shipped": shipped,
        "all_folds_f1": all_scores,
        "held_out": held_out,
        "control": control,
    }
    kind.report.write_text(json.dumps(summary, indent=2) + "\n")
    return summary


def markdown_lines(ds: str, single_f1: float, best_baseline_f1: float, kind: Limit = LIMITS["max_steps"]) -> list[str]:
    """The limit's part of ``docs/results.md`` for ``ds`` (``bench/cv_report.py``), from the report on disk, with
    the protocol's shipping test against single retrieval's and the best baseline's F1 on the same questions."""
    if not kind.report.exists():
        return [
            f"No replay of the `{kind.setting}` candidates yet (`python bench/step_limits.py --limit {kind.setting}`)."
        ]
    summary = json.loads(kind.report.read_text())
    held = summary["held_out"][ds]
    chosen = ", ".join(f"fold {j}: {c[kind.setting]}" for j, c in summary["nested_choice"].items())
    low, high = held["difference_ci"]
    per_limit = held["per_limit_held_out_f1"]
    nested = held["f1_nested"]
    meets = nested >= single_f1 + 0.03 and nested >= best_baseline_f1
    lines = [
        f"Chosen on the other folds (the smallest limit within 1.0 F1 of the best, both datasets averaged): {chosen}; "
        f"on all five folds: {summary['shipped']}. Held-out F1 with each fold's choice **{100 * nested:.1f}** "
        f"against {100 * held['f1_as_made']:.1f} with {kind.words} (paired {100 * held['difference']:+.1f}, 95% "
        f"{100 * low:+.1f} to {100 * high:+.1f}, {held['questions']} questions), rounds per question "
        f"{held['rounds_nested']:.2f} against {held['rounds_as_made']:.2f}; against single retrieval's "
        f"{100 * single_f1:.1f}: {100 * (nested - single_f1):+.1f}. "
        + (
            "The protocol's test (at least 3 above single retrieval, no lower than any baseline) is met on this "
            "dataset; a limit ships only when it is met on both."
            if meets
            else "The protocol's test (at least 3 above single retrieval, no lower than any baseline) is **not met** "
            f"on this dataset, and a limit ships only when it is met on both: the default keeps {kind.words}."
        ),
        "",
        "Each limit's F1 on folds 1-4, for information only (picking a limit from this row would be choosing on the "
        "held-out folds, which the protocol forbids):",
        "",
        f"| `{kind.setting}` | " + " | ".join(str(limit) for limit in kind.candidates) + " |",
        "| --- | " + " | ".join("---:" for _ in kind.candidates) + " |",
        "| F1, folds 1-4 | " + " | ".join(f"{100 * per_limit[str(limit)]:.1f}" for limit in kind.candidates) + " |",
        "",
    ]
    control = summary["control"][ds]
    if control["questions"]:
        lines.append(
            f"Control (fold {CONTROL_FOLD}, the final stage generated anew on each question's own last state): "
            f"{control['same_answer']} of {control['questions']} answers equal to the run's."
        )
    else:
        lines.append("Control: the step limit's (the same replay of the final stage).")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--report", action="store_true", help="only the report, from the replays made")
    parser.add_argument("--in-flight", type=int, default=16, help="final stages in progress at once (default 16)")
    parser.add_argument("--limit", choices=list(LIMITS), default="max_steps", help="the limit under test")
    args = parser.parse_args()
    kind = LIMITS[args.limit]
    if not args.report:
        replay(args.in_flight, kind)
    print(json.dumps(report(kind), indent=2))


if __name__ == "__main__":
    main()
