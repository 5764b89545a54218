"""Each default rule's effect, measured on the lines it was not designed on (``docs/evaluation_protocol.md``).

The default's own run (``runs/results/DATASET_dev/seakr.jsonl.gz``) records in every trace which rules changed a
decision (``rules_applied``).  On a question where rule R changed nothing, the default without R makes exactly the
default's calls, so ``run`` answers only the questions where R acted (on R's evaluation lines) with ``--rules
default,-R``, end to end, into ``runs/results/rules/DATASET_dev/without-R.jsonl`` (gzip it when it is
finished); ``report`` pairs them with the
default over all of R's evaluation lines (the others keep the default's answer and cost).

    python experiments/rule_evidence.py run --rule claim-check --dataset hotpotqa
    python experiments/rule_evidence.py report [--json]
    python experiments/rule_evidence.py decides   # what decided each step of the default's runs, which rules acted
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
from collections.abc import Callable
from pathlib import Path

from seakr_integrations.evaluation.results import finished_results, read_results

ROOT = Path(__file__).resolve().parents[1]
RESULTS = Path(os.environ.get("SEAKR_RESULTS", ROOT / "runs" / "results"))
"""The results page's runs (``SEAKR_RESULTS`` when they are in another checkout)."""
DATASETS = ("hotpotqa", "2wiki")

# Where each rule came from (docs/evaluation_protocol.md): (description, lines it came from).
DESIGNED: dict[str, tuple[str, Callable[[str, int], bool]]] = {
    "search-question-first": ("pilots on lines 200-239; chosen by cross-validation on every line", lambda d, i: False),
    "accept-covered-steps": ("pilots on lines 200-239; chosen by cross-validation on every line", lambda d, i: False),
    "step-limit": ("pilots on lines 200-239; its limit chosen by cross-validation on every line", lambda d, i: False),
    "answer-from-passages": ("pilots on lines 200-239; chosen by cross-validation on every line", lambda d, i: False),
    "claim-check": ("traces of lines 220-299; the smoke test of HotpotQA 0-7; its backing chosen by cross-validation",
                    lambda d, i: i >= 220 or (d == "hotpotqa" and i <= 7)),
    "token-cascade": ("fold 0 (with and without); its signal from every line's first step", lambda d, i: i % 5 == 0),
    "anchor-queries": ("traces of lines 220-299", lambda d, i: i >= 220),
    "keep-first-result": ("lines 0-99; 2Wiki 220-299", lambda d, i: i <= 99 or (d == "2wiki" and i >= 220)),
    "cover-compared-entities": ("2Wiki lines 220-299", lambda d, i: d == "2wiki" and i >= 220),
    "stop-on-repeated-step": ("lines 0-99", lambda d, i: i <= 99),
    "passage-limit": ("nested cross-validation on lines 0-299 (no line is free of it)", lambda d, i: False),
    "no-knowledge-without-passages": ("lines 0-99", lambda d, i: i <= 99),
    "sample-finals-when-they-differ": ("traces of lines 0-299 (it changes cost only)", lambda d, i: False),
    "final-margin": ("fold 0", lambda d, i: i % 5 == 0),
    "answer-with-option": ("fold 0; its effect on folds 1-4 was seen before it was adopted", lambda d, i: i % 5 == 0),
}  # fmt: skip
NONE_FREE = {
    "passage-limit",
    "sample-finals-when-they-differ",
    "search-question-first",
    "accept-covered-steps",
    "step-limit",
    "answer-from-passages",
    "token-cascade",
    "answer-with-option",
}
"""Rules no evaluation line is free of: chosen on every line (measured on all of them), or measured off their design
lines on lines the choice had already seen (``token-cascade``'s signal, from every line's first step;
``answer-with-option``'s effect on folds 1-4)."""


def line_numbers(dataset: str) -> dict[str, int]:
    """Question id -> its line in the dataset's question file."""
    lines = (ROOT / "data" / f"{dataset}_dev.jsonl").read_text(encoding="utf-8").splitlines()
    return {json.loads(line)["id"]: i for i, line in enumerate(lines)}


def records(path: Path) -> list[dict]:
    return [r for r in read_results(path)[1] if "id" in r]


def rule_names(path: Path) -> list[str]:
    return [r["rule"] for r in read_results(path)[0]["seakr"].get("rules") or []]


def default_run(rule: str, dataset: str) -> Path:
    """The default's run that ``rule``'s rerun was made from: today's, unless the rerun's rules and ``rule`` are an
    earlier default's (``rules/DATASET_dev/default-*.jsonl.gz``)."""
    today = RESULTS / f"{dataset}_dev" / "seakr.jsonl.gz"
    rerun = finished_results(without_path(rule, dataset))
    if not rerun.exists():
        return today
    made_from = set(rule_names(rerun)) | {rule}
    for base in [today, *sorted((RESULTS / "rules" / f"{dataset}_dev").glob("default-*.jsonl.gz"))]:
        if base.exists() and set(rule_names(base)) == made_from:
            return base
    raise SystemExit(f"{rerun}: no default's run has its rules and {rule}; rerun it (the default changed)")


def evaluation_records(rule: str, dataset: str) -> list[dict]:
    """The default's records on ``rule``'s evaluation lines."""
    lines = line_numbers(dataset)
    designed = DESIGNED[rule][1]
    base = default_run(rule, dataset)
    return [r for r in records(base) if not designed(dataset, lines[r["id"]])] if base.exists() else []


def acted(record: dict, rule: str) -> bool:
    return any(a["rule"] == rule for a in record.get("trace", {}).get("rules_applied", []))


def without_path(rule: str, dataset: str) -> Path:
    return RESULTS / "rules" / f"{dataset}_dev" / f"without-{rule}.jsonl"


def run(rule: str, dataset: str, batch_size: int) -> None:
    """The default without ``rule`` on the questions of its evaluation lines where it acted."""
    from seakr_integrations.backends.loading import load_backend
    from seakr_integrations.cli.backend import quiet_vllm_start
    from seakr_integrations.demo import cached_index
    from seakr_integrations.evaluation import ResultsFile, evaluate, make_method, read_questions
    from seakr_integrations.reasoning import SeaKRConfig

    wanted = {r["id"] for r in evaluation_records(rule, dataset) if acted(r, rule)}
    questions = [q for q in read_questions(ROOT / "data" / f"{dataset}_dev.jsonl").questions if q.id in wanted]
    print(f"{rule} on {dataset}: acted on {len(questions)} questions of its evaluation lines", flush=True)
    if not questions:
        return
    corpus = ROOT / "data" / f"corpus_{dataset}.jsonl"
    config = SeaKRConfig(exemplar_style=dataset, rules=f"default,-{rule}")
    quiet_vllm_start()
    with load_backend("vllm", "qwen", dtype="float32") as backend:
        method = make_method("seakr", backend, cached_index(corpus, progress=False), config)
        setup = {
            **method.describe(),
            "dataset": f"{dataset}_dev.jsonl",
            "questions": f"where {rule} acted in runs/results/{dataset}_dev/seakr.jsonl, off its design lines",
            "retriever": {"bm25_corpus": corpus.name},
            "model": "qwen",
            "backend": "vllm",
            "dtype": "float32",
        }
        path = without_path(rule, dataset)
        with ResultsFile.open(path, setup) as results:
            summary = evaluate(method, questions, results, batch_size=batch_size, progress=False)
    print(f"without {rule} on {dataset}: F1 {summary.f1:.3f} ({summary.questions} q) -> {path}", flush=True)


def effect(rule: str, dataset: str) -> dict | None:
    """The default minus the default without ``rule``, paired over the rule's evaluation lines."""
    from seakr_integrations.evaluation.summary import bootstrap_interval

    default = evaluation_records(rule, dataset)
    if not default:
        return None
    path = finished_results(without_path(rule, dataset))
    rerun = {r["id"]: r for r in records(path)} if path.exists() else {}
    acting = [r for r in default if acted(r, rule)]
    missing = [r["id"] for r in acting if r["id"] not in rerun]
    without = [rerun.get(r["id"], r) if acted(r, rule) else r for r in default]

    def mean(rows: list[dict], key: str) -> float:
        return statistics.mean(r[key] for r in rows)

    diffs = [a["f1"] - b["f1"] for a, b in zip(default, without, strict=True)]
    low, high = bootstrap_interval(diffs)
    return {
        "rule": rule,
        "dataset": dataset,
        "default_run": default_run(rule, dataset).relative_to(RESULTS).as_posix(),
        "designed_on": DESIGNED[rule][0],
        "questions": len(default),
        "acted": len(acting),
        "missing": len(missing),
        "f1_default": 100 * mean(default, "f1"),
        "f1_without": 100 * mean(without, "f1"),
        "f1_difference": 100 * statistics.mean(diffs),
        "f1_low": 100 * low,
        "f1_high": 100 * high,
        "lm_calls_difference": mean(default, "lm_calls") - mean(without, "lm_calls"),
        "tokens_difference": mean(default, "generated_tokens") - mean(without, "generated_tokens"),
        "seconds_difference": mean(default, "seconds") - mean(without, "seconds"),
    }


def report(as_json: bool) -> None:
    rows = [e for rule in DESIGNED for d in DATASETS if (e := effect(rule, d)) is not None]
    if as_json:
        print(json.dumps(rows, indent=2))
        return
    head = ["rule", "dataset", "default's run", "lines free of it", "acted on", "F1 with - without (95%)", "LM calls"]
    print("| " + " | ".join([*head, "tokens", "s"]) + " |")
    print("| --- | --- | --- | ---: | ---: | --- | ---: | ---: | ---: |")
    for e in rows:
        free = f"none of {e['questions']}" if e["rule"] in NONE_FREE else str(e["questions"])
        cells = [f"`{e['rule']}`", e["dataset"], e["default_run"], free, str(e["acted"])]
        if e["missing"]:
            cells += ["not rerun yet", "", "", ""]
        else:
            cells += [
                f"{e['f1_difference']:+.1f} ({e['f1_low']:+.1f} to {e['f1_high']:+.1f})",
                f"{e['lm_calls_difference']:+.2f}",
                f"{e['tokens_difference']:+.0f}",
                f"{e['seconds_difference']:+.2f}",
            ]
        print("| " + " | ".join(cells) + " |")


def decides() -> None:
    """What decided each step of the default's runs (the gate's stages) and on how many questions each rule acted."""
    import sys
    from collections import Counter

    if str(ROOT) not in sys.path:  # run as a script: the package is the root's experiments/
        sys.path.insert(0, str(ROOT))
    from experiments.results_page import STAGES  # the gate's reasons (GateReason) by the stage that decided

    runs = {d: records(RESULTS / f"{d}_dev" / "seakr.jsonl.gz") for d in DATASETS}
    reasons = {
        d: Counter(s["reason"] for r in rows for s in r["trace"]["steps"] if s["reason"]) for d, rows in runs.items()
    }
    acted = {
        d: Counter(a for r in rows for a in {x["rule"] for x in r["trace"]["rules_applied"]})
        for d, rows in runs.items()
    }
    print("| | " + " | ".join(f"{d} ({len(runs[d])} q)" for d in DATASETS) + " |")
    print("| --- | " + " | ".join("---:" for _ in DATASETS) + " |")
    for reason, stage in STAGES.items():
        if any(reasons[d][reason] for d in DATASETS):
            cells = [f"{100 * reasons[d][reason] / sum(reasons[d].values()):.0f}%" for d in DATASETS]
            print(f"| steps decided by: {stage} | " + " | ".join(cells) + " |")
    first = {
        d: sum(r["trace"]["steps"][0]["decision"] == "retrieve" for r in runs[d] if r["trace"]["steps"])
        for d in DATASETS
    }
    print("| first steps that retrieved | " + " | ".join(f"{first[d]} of {len(runs[d])}" for d in DATASETS) + " |")
    for rule in sorted({x for d in DATASETS for x in acted[d]}, key=lambda x: -sum(acted[d][x] for d in DATASETS)):
        print(f"| questions where `{rule}` acted | " + " | ".join(str(acted[d][rule]) for d in DATASETS) + " |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="the default without one rule, where it acted")
    r.add_argument("--rule", required=True, choices=list(DESIGNED))
    r.add_argument("--dataset", required=True, choices=DATASETS)
    r.add_argument("--batch-size", type=int, default=8)
    p = sub.add_parser("report", help="each rule's paired effect on its evaluation lines")
    p.add_argument("--json", action="store_true")
    sub.add_parser("decides", help="what decided each step of the default's runs, and which rules acted")
    args = parser.parse_args()
    if args.command == "run":
        run(args.rule, args.dataset, args.batch_size)
    elif args.command == "decides":
        decides()
    else:
        report(args.json)


if __name__ == "__main__":
    main()
