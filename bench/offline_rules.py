"""Evaluate candidate SeaKR decision rules offline, on the stored traces of lines 0-99 of HotpotQA and 2Wiki.

Parameters are chosen on lines 0-49 of both datasets ("choose") and checked on lines 50-99 ("check"); the whole
0-99 is shown too.  No model runs: every number is re-scored from what the traces hold, with the library's own
rule functions (``seakr_integrations.reasoning.rules``) and scorer.

How far each estimate can be trusted:

* final choice: **exact** for the same trace (both final answers are in it; a rule only picks one);
* re-ranking: a **proxy** (is the kept passage a supporting one?); the later steps would differ.  The on-policy
  end-to-end check is the pair of runs with and without re-ranking (``seakr-paper`` / ``seakr-no-rerank``);
* gate: a **proxy** (AUROC against "single retrieval beat CoT on this question"); FLARE's first step is the same
  greedy text as SeaKR's, so its first decision is the token-probability signal on SeaKR's first step;
* repeated-step stop: LM calls saved are **exact**; the knowledge answer is exact where no passage came after
  the repeat; the rationales answer is a proxy (its context loses the repeated lines).

Usage, from the repository's root (it reads the traces with the project's ``experiments`` package)::

    python -m bench.offline_rules [--runs runs/answer-prefix] [--data data]
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import statistics
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from experiments.auroc import auroc
from experiments.method_runs import load_runs
from seakr_integrations.evaluation.scoring import score
from seakr_integrations.reasoning.answer import is_unknown
from seakr_integrations.reasoning.jsonform import number_from_json
from seakr_integrations.reasoning.rules import pick_final, pick_passage, repeats_earlier

DATASETS = {"hotpotqa": "hotpotqa_dev", "2wiki": "2wiki_dev"}
LINES = 100
CHOOSE = range(0, 50)
CHECK = range(50, 100)
SEAKR = "seakr-paper"
"""SeaKR's run on these lines (``seakr-paper.jsonl``): the paper's rules, the default when it was made (its header
says method ``seakr``).  Runs are keyed by file name."""
FINAL_RUNS = (SEAKR, "seakr-no-rerank", "seakr-always-retrieve", "seakr-always-retrieve-no-rerank")
RERANK_RUNS = (SEAKR, "seakr-always-retrieve")
MARGINS = (0.0, 0.25, 0.5, 1.0, 1.5, 2.0, 3.0, math.inf)
SPLITS = {"choose 0-49": CHOOSE, "check 50-99": CHECK, "all 0-99": range(LINES)}

Record = dict[str, Any]


def load(runs_dir: Path, data_dir: Path) -> dict[str, dict[str, list[Record]]]:
    """Records by dataset and method, checked to be lines 0-99 of the dataset in order (only those lines read)."""
    out: dict[str, dict[str, list[Record]]] = {}
    for name, folder in DATASETS.items():
        with open(data_dir / f"{folder}.jsonl", encoding="utf-8") as f:
            ids = [str(json.loads(line)["id"]) for line in itertools.islice(f, LINES)]
        runs = {run.path.stem: run.records[:LINES] for run in load_runs([runs_dir / folder])}
        for method, records in runs.items():
            if [str(r["id"]) for r in records] != ids:
                raise ValueError(f"{folder}/{method}.jsonl: its records are not lines 0-{LINES - 1} in order")
        out[name] = runs
    return out


def u(value: Any) -> float:
    return number_from_json((value or {}).get("value") if isinstance(value, dict) else value)


def mean(values: Iterable[float]) -> float:
    values = list(values)
    return 100 * statistics.fmean(values) if values else float("nan")


def paired_interval(diffs: Sequence[float], samples: int = 10_000, seed: int = 0) -> tuple[float, float, float]:
    """Mean difference (in points) and its 95 % paired percentile-bootstrap interval."""
    data = np.asarray(diffs, dtype=float) * 100
    rng = np.random.default_rng(seed)
    means = data[rng.integers(0, len(data), size=(samples, len(data)))].mean(axis=1)
    low, high = np.percentile(means, [2.5, 97.5])
    return float(data.mean()), float(low), float(high)


def table(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    def cell(x: Any) -> str:
        return f"{x:.1f}" if isinstance(x, float) else str(x)

    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell(x) for x in row) + " |" for row in rows]
    return "\n".join(lines)


# ------------------------------------------------------------------------------------------------ final choice
FinalRule = Callable[[Record], str]


def final_rules() -> dict[str, FinalRule]:
    def margin_rule(m: float, knowledge_needs_passages: bool = False) -> FinalRule:
        def rule(rec: Record) -> str:
            trace, finals = rec["trace"], rec["trace"]["finals"]
            if knowledge_needs_passages and not trace["passages"]:
                return "rationales"
            r, k = finals["rationales"], finals["knowledge"]
            return pick_final(
                u(r["uncertainty"]),
                u(k["uncertainty"]),
                rationales_unknown=is_unknown(r["answer"]),
                knowledge_unknown=is_unknown(k["answer"]),
                margin=m,
            )

        return rule

    rules: dict[str, FinalRule] = {
        f"margin {m:g}" + (" (paper)" if m == 0 else " (= always knowledge)" if m == math.inf else ""): margin_rule(m)
        for m in MARGINS
    }
    rules["always rationales"] = lambda rec: "rationales"
    rules["no passages: rationales; else paper"] = margin_rule(0.0, True)
    return rules


def final_f1(rec: Record, strategy: str) -> float:
    return score(rec["trace"]["finals"][strategy]["answer"] or "", rec["golds"]).f1


def final_section(data: dict[str, dict[str, list[Record]]]) -> str:
    rules = final_rules()
    # per (dataset, line): the rule's F1 on each run's trace
    f1 = {
        name: {
            (ds, line): [final_f1(runs[run][line], rule(runs[run][line])) for run in FINAL_RUNS]
            for ds, runs in data.items()
            for line in range(LINES)
        }
        for name, rule in rules.items()
    }
    paper = f1["margin 0 (paper)"]
    out = ["### Final choice (exact per trace), F1 averaged over the four SeaKR-family runs' traces", ""]
    rows = []
    for name in rules:
        row: list[Any] = [name]
        for lines in SPLITS.values():
            row.append(mean(statistics.fmean(f1[name][(ds, x)]) for ds in DATASETS for x in lines))
        diffs = [
            statistics.fmean(f1[name][(ds, x)]) - statistics.fmean(paper[(ds, x)]) for ds in DATASETS for x in CHECK
        ]
        d, lo, hi = paired_interval(diffs)
        row.append(f"{d:+.1f} ({lo:+.1f} to {hi:+.1f})")
        rows.append(row)
    out.append(table(["rule", *SPLITS, "check minus paper (95% CI)"], rows))
    out += ["", "Per run and dataset (choose / check):", ""]
    rows = []
    for name in rules:
        row = [name]
        for i in range(len(FINAL_RUNS)):
            for ds in DATASETS:
                a = mean(f1[name][(ds, x)][i] for x in CHOOSE)
                b = mean(f1[name][(ds, x)][i] for x in CHECK)
                row.append(f"{a:.1f} / {b:.1f}")
        rows.append(row)
    out.append(table(["rule", *(f"{run} {ds}" for run in FINAL_RUNS for ds in DATASETS)], rows))
    empty = {(ds, run): sum(not r["trace"]["passages"] for r in data[ds][run]) for ds in DATASETS for run in FINAL_RUNS}
    out += [
        "",
        "Questions that kept no passage (their knowledge answer is a closed-book answer; answering from the "
        "rationales alone saves that LM call): " + ", ".join(f"{run} {ds} {n}" for (ds, run), n in empty.items()),
    ]
    best = {
        ds: mean(max(final_f1(r, s) for s in ("rationales", "knowledge")) for r in data[ds][SEAKR]) for ds in DATASETS
    }
    out += [
        "",
        f"Better of the two answers on `{SEAKR}` (the ceiling): {best['hotpotqa']:.1f} HotpotQA, "
        f"{best['2wiki']:.1f} 2Wiki.",
    ]
    return "\n".join(out)


# --------------------------------------------------------------------------------------------------- re-ranking
Round = tuple[str, str, int, list[float], list[bool], float]


def rerank_rounds(data: dict[str, dict[str, list[Record]]]) -> list[Round]:
    """(run, dataset, line, uncertainties in search order, supporting flags, the step's own uncertainty without a
    new passage) of every round with >= 2 candidates."""
    rounds = []
    for ds, runs in data.items():
        for run in RERANK_RUNS:
            for line, rec in enumerate(runs[run]):
                gold = {t.casefold() for t in rec.get("supporting_titles", ())}
                for step in rec["trace"]["steps"]:
                    cands = sorted(step["candidates"], key=lambda c: c["search_rank"])
                    if len(cands) >= 2:
                        us = [number_from_json(c["rank_value"]) for c in cands]
                        supporting = [c["title"].casefold() in gold for c in cands]
                        rounds.append((run, ds, line, us, supporting, u(step["uncertainty"])))
    return rounds


def fusion(us: Sequence[float]) -> int:
    """Rank fusion: the smallest sum of search rank and uncertainty rank; ties keep the search order."""
    order = sorted(range(len(us)), key=lambda i: (us[i], i))
    urank = {i: r for r, i in enumerate(order)}
    return min(range(len(us)), key=lambda i: (i + urank[i], i))


def first_that_helps(us: Sequence[float], before: float) -> int:
    """The first candidate (search order) whose step is less uncertain than the step written without it; the
    search engine's first when none is."""
    return next((i for i, x in enumerate(us) if x < before), 0)


def rerank_section(data: dict[str, dict[str, list[Record]]]) -> str:
    rounds = rerank_rounds(data)
    rules: dict[str, Callable[[Round], int]] = {
        f"margin {m:g}" + (" (paper)" if m == 0 else " (= search order)" if m == math.inf else ""): (
            lambda r, m=m: pick_passage(r[3], m)
        )
        for m in MARGINS
    }
    rules["rank fusion (search rank + uncertainty rank)"] = lambda r: fusion(r[3])
    rules["first candidate that lowers U below the step's own"] = lambda r: first_that_helps(r[3], r[5])
    out = [
        f"### Re-ranking (proxy: the kept passage is supporting), rounds of `{SEAKR}` and `seakr-always-retrieve`",
        "",
    ]
    rows = []
    paper_pick = {id(r): pick_passage(r[3]) for r in rounds}
    for name, rule in rules.items():
        row: list[Any] = [name]
        for lines in SPLITS.values():
            sel = [r for r in rounds if r[2] in lines]
            row.append(f"{sum(r[4][rule(r)] for r in sel)}/{len(sel)}")
        row.append(sum(rule(r) != 0 for r in rounds))
        by_q: dict[tuple[str, int], float] = {}
        for r in rounds:
            if r[2] in CHECK:
                key = (r[1], r[2])
                by_q[key] = by_q.get(key, 0.0) + r[4][rule(r)] - r[4][paper_pick[id(r)]]
        n = sum(1 for r in rounds if r[2] in CHECK)
        keys = [(ds, x) for ds in DATASETS for x in CHECK]
        d, lo, hi = paired_interval([by_q.get(key, 0.0) * len(keys) / n for key in keys])  # mean = rate difference
        row.append(f"{d:+.1f} ({lo:+.1f} to {hi:+.1f})")
        rows.append(row)
    out.append(
        table(
            [
                "rule",
                *SPLITS,
                "rounds off the search order (0-99)",
                "check: supporting rounds minus paper's, % of rounds (95% CI)",
            ],
            rows,
        )
    )
    per_run = []
    for run, ds in itertools.product(RERANK_RUNS, DATASETS):
        sel = [r for r in rounds if r[0] == run and r[1] == ds]
        per_run.append(
            f"{run} {ds}: paper {sum(r[4][pick_passage(r[3])] for r in sel)}/{len(sel)}, "
            f"search order {sum(r[4][0] for r in sel)}/{len(sel)}"
        )
    out += ["", "Supporting passage kept, by run (0-99): " + "; ".join(per_run) + "."]
    out += ["", "On-policy end to end (F1, whole runs; no re-ranking = margin inf):", ""]
    rows = []
    for ds in DATASETS:
        for with_, without in (
            (SEAKR, "seakr-no-rerank"),
            ("seakr-always-retrieve", "seakr-always-retrieve-no-rerank"),
        ):
            a, b = data[ds][with_], data[ds][without]
            row = [ds, f"{without} minus {with_}"]
            for lines in SPLITS.values():
                row.append(mean(b[x]["f1"] for x in lines) - mean(a[x]["f1"] for x in lines))
            d, lo, hi = paired_interval([b[x]["f1"] - a[x]["f1"] for x in range(LINES)])
            calls = statistics.fmean(r["lm_calls"] for r in b) - statistics.fmean(r["lm_calls"] for r in a)
            rows.append([*row, f"{d:+.1f} ({lo:+.1f} to {hi:+.1f})", f"{calls:+.1f}"])
    out.append(table(["dataset", "F1 difference", *SPLITS, "0-99 (95% CI)", "LM calls / question"], rows))
    return "\n".join(out)


# ---------------------------------------------------------------------------------------------------------- gate
def gate_section(data: dict[str, dict[str, list[Record]]]) -> str:
    out = ["### First-step gate (proxy: AUROC for 'single retrieval beat CoT'; 0.5 is chance)", ""]
    rows = []
    for ds, runs in data.items():
        seakr, flare = runs[SEAKR], runs["flare"]
        same = sum(
            s["trace"]["steps"][0]["pseudo_generation"] == f["trace"]["steps"][0]["pseudo_generation"]
            for s, f in zip(seakr, flare, strict=True)
        )
        helped = [s["f1"] > c["f1"] for s, c in zip(runs["single-retrieval"], runs["cot"], strict=True)]
        delta = seakr[0]["trace"]["config"]["delta"]
        eig = [u(r["trace"]["steps"][0]["uncertainty"]) for r in seakr]
        low = [float(f["trace"]["steps"][0]["decision"] == "retrieve") for f in flare]  # a token below FLARE's 0.4
        order = sorted(range(LINES), key=lambda i: eig[i])
        erank = {i: r for r, i in enumerate(order)}
        signals = {
            "EigenScore (paper)": eig,
            "token probability < 0.4 (FLARE)": low,
            "EigenScore rank + token signal": [erank[i] + LINES * low[i] / 2 for i in range(LINES)],
            "U > delta OR token signal": [float(eig[i] > delta or low[i] > 0) for i in range(LINES)],
            "U > delta AND token signal": [float(eig[i] > delta and low[i] > 0) for i in range(LINES)],
        }
        for name, values in signals.items():
            row: list[Any] = [ds, name]
            for lines in SPLITS.values():
                score_ = auroc([values[i] for i in lines], [helped[i] for i in lines])
                row.append("-" if score_ is None else f"{score_:.2f}")
            rows.append(row)
        out_note = f"{ds}: FLARE's first step is SeaKR's word for word on {same} of {LINES}; {sum(helped)} helped."
        out.append(out_note)
    out += ["", table(["dataset", "signal", *SPLITS], rows)]
    return "\n".join(out)


# --------------------------------------------------------------------------------------------- repeated step
def repeat_section(data: dict[str, dict[str, list[Record]]]) -> str:
    rows = []
    for ds, run in itertools.product(data, FINAL_RUNS):
        records = data[ds][run]
        steps = repeated = questions = saved = later_passage = later_new = 0
        total_calls = sum(r["lm_calls"] for r in records)
        for rec in records:
            seen: list[str] = []
            stop_at = None
            for step in rec["trace"]["steps"]:
                text = (step["accepted"] or "").strip()
                if not text:
                    continue
                steps += 1
                if repeats_earlier(text, seen):
                    repeated += 1
                    stop_at = step["index"] if stop_at is None else stop_at
                seen.append(text)
            if stop_at is not None:
                questions += 1
                after = [s for s in rec["trace"]["steps"] if s["index"] > stop_at]
                saved += sum(1 + len(s["candidates"]) for s in after)
                later_passage += any(s["chosen_passage_id"] for s in after)
                kept: list[str] = []
                for s in rec["trace"]["steps"]:
                    text = (s["accepted"] or "").strip()
                    if s["index"] > stop_at and text and not repeats_earlier(text, kept):
                        later_new += 1
                        break
                    kept.append(text)
        rows.append([ds, run, f"{repeated}/{steps}", questions, later_passage, later_new, f"{saved}/{total_calls}"])
    header = [
        "dataset",
        "run",
        "accepted steps repeating an earlier one",
        "questions",
        "with a passage kept after it",
        "with a new step after it",
        "LM calls saved (exact)",
    ]
    return "\n".join(["### Stopping on a repeated step", "", table(header, rows)])


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=Path, default=Path("runs/answer-prefix"))
    parser.add_argument("--data", type=Path, default=Path(__file__).resolve().parents[1] / "data")
    args = parser.parse_args(argv)
    data = load(args.runs, args.data)
    for section in (final_section, rerank_section, gate_section, repeat_section):
        print(section(data), end="\n\n")


if __name__ == "__main__":
    main()
