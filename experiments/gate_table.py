"""What the first-step gate knows: AUROC of every signal for "retrieval helps" and for "the step's claim is wrong".

Reads the first-step readings of ``experiments/gate_signals.py`` (``runs/signals/DATASET.jsonl``) and labels each
question from the baselines' results on the same lines (CoT and single retrieval on lines 0-299,
Qwen2.5-Coder-0.5B-Instruct, 64 tokens: four runs made at different times, kept compressed in
``runs/signals/baselines/`` under the folders they were made in):

* **retrieval helps**: single retrieval's F1 is above CoT's on the question (same prompts, one search apart);
* **the claim is wrong**: the first step says something the question's gold supporting paragraphs do not: fewer
  than half of its content words that are not in the question occur in those paragraphs (a step that adds no
  word of its own is left out).  A proxy, not a human judgement.

Every signal is oriented "higher = more uncertain"; AUROC 0.5 is chance.  The 95% intervals resample questions
(2,000 bootstrap draws).  Writes ``docs/gate_signals.md``, from the repository's root:

    python experiments/gate_table.py
"""

from __future__ import annotations

import gzip
import json
import math
import re
import sys
from pathlib import Path

from seakr_integrations.evaluation.auroc import auroc_interval

ROOT = Path(__file__).resolve().parents[1]
DATASETS = ("hotpotqa", "2wiki")
RESULTS = (
    "runs/signals/baselines/answer-prefix/{ds}_dev",  # lines 0-99
    "runs/signals/baselines/answer-prefix/train/{ds}",  # lines 100-199
    "runs/signals/baselines/cv/{ds}_dev",  # lines 200-219
    "runs/signals/baselines/confirmation/{ds}_dev",  # lines 220-299
)
SIGNALS = [  # (name, where it is in a row, what it needs, the library's estimator of it: None when it is none)
    ("EigenScore (SeaKR)", ("scores", "eigenscore"), "k samples + their hidden-state read-outs", "eigenscore"),
    ("LN-entropy", ("scores", "ln_entropy"), "k samples", "ln_entropy"),
    ("multi-perplexity", ("scores", "multi_perplexity"), "k samples", "multi_perplexity"),
    ("prompt probe", ("scores", "prompt"), "one more greedy call", "prompt"),
    ("energy", ("scores", "energy"), "greedy + a logits hook in the engine", "energy"),
    ("perplexity", ("scores", "perplexity"), "greedy only", "perplexity"),
    ("1 - least token probability", ("cheap", "one_minus_min_prob"), "greedy only", "min_token_prob"),
    ("mean token entropy", ("cheap", "mean_entropy"), "greedy + top-20 log-probabilities", None),
    ("largest token entropy", ("cheap", "max_entropy"), "greedy + top-20 log-probabilities", None),
    ("length in tokens", ("cheap", "length"), "greedy only", None),
]
CLAIM_CHECK = "claim check (the step names an entity: 1, else 0)"
"""The claim-check rule's signal on a first step, where no passage is kept yet: whether the step names anything."""
PROBE = "linear probe on the step's hidden state (cross-validated)"
"""The state probe's row, from ``experiments/probe_cv.py --out runs/signals/probe_cv.json``."""
_WORD = re.compile(r"\w+")


def _on_plain_server(estimator: str | None) -> str:
    """Whether SeaKR serves this signal from a stock ``vllm serve`` (token log-probabilities only, no plugin)."""
    from seakr_integrations.backends.openai_plain import logprob_estimators

    if estimator is None:
        return "not a library estimator"
    return "yes" if estimator in logprob_estimators() else "no (needs seakr serve)"


def baseline_f1(ds: str, method: str) -> dict[str, float]:
    f1: dict[str, float] = {}
    for pattern in RESULTS:
        path = ROOT / pattern.format(ds=ds) / f"{method}.jsonl.gz"
        if path.exists():
            for line in gzip.decompress(path.read_bytes()).decode("utf-8").splitlines()[1:]:
                row = json.loads(line)
                f1.setdefault(row["id"], float(row["f1"]))
    return f1


def claim_wrong(step: str, question: dict) -> bool | None:
    from seakr_integrations.reasoning.query import STOP_WORDS

    asked = {w.lower() for w in _WORD.findall(question["question"])}
    new = {w.lower() for w in _WORD.findall(step)} - asked - STOP_WORDS
    if not new:
        return None
    gold = " ".join(
        f"{c['title']} {c['text']}" for c in question["context"] if c["title"] in question["supporting_titles"]
    )
    have = {w.lower() for w in _WORD.findall(gold)}
    return len(new & have) / len(new) < 0.5


def value(row: dict, where: tuple[str, str]) -> float:
    v = row[where[0]].get(where[1])
    return math.inf if v is None else float(v)


def costs(rows: list[dict]) -> dict[str, float]:
    batches = [r for r in rows if "batch" in r]
    n = sum(len(b["batch"]) for b in batches)
    return {
        "greedy_s": sum(b["greedy_s"] for b in batches) / n,
        "full_s": sum(b["full_s"] for b in batches) / n,
        "probe_s": sum(b["probe_s"] for b in batches) / n,
        "greedy_tokens": sum(b["greedy_tokens"] for b in batches) / n,
        "full_tokens": sum(b["full_tokens"] for b in batches) / n,
    }


def _probe_cv() -> list[dict]:
    path = ROOT / "runs" / "signals" / "probe_cv.json"
    return json.loads(path.read_text()) if path.exists() else []


def _probe_differences(probe: dict[str, dict]) -> list[str]:
    """One sentence: the cross-validated probe against EigenScore and the free greedy signal, paired."""
    parts = []
    for label, e in probe.items():
        if "probe_minus_eigenscore" not in e:
            continue
        (d1, l1, h1), (d2, l2, h2) = e["probe_minus_eigenscore"], e["probe_minus_min_token_prob"]
        parts.append(
            f"for {label}, {d1:+.2f} ({l1:+.2f} to {h1:+.2f}) against EigenScore and {d2:+.2f} ({l2:+.2f} to "
            f"{h2:+.2f}) against 1 - least token probability"
        )
    if not parts:
        return []
    return [
        "The state probe's AUROC minus the others', on the same questions (paired bootstrap 95%): "
        + "; ".join(parts)
        + ". Its vectors are the greedy step's hidden state at EOS, recomputed in transformers (CPU, float32) from "
        "the step's text (`experiments/probe_vectors.py`); its folds are `line % 5`, and the layer, source and "
        "penalty were chosen inside the training folds (`experiments/probe_cv.py`)."
    ]


def claim_check_against_state() -> list[str]:
    """Whether the model's state could take the English-name claim check's place, from the cross-validated rows."""
    rows = [e for e in _probe_cv() if e["label"] == "claim wrong"]
    if not rows:
        return []
    parts = [
        f"{e['dataset']} {e['probe'][0]:.2f} against the free greedy signal's {e['min_token_prob'][0]:.2f}, paired "
        f"{e['probe_minus_min_token_prob'][0]:+.2f} ({e['probe_minus_min_token_prob'][1]:+.2f} to "
        f"{e['probe_minus_min_token_prob'][2]:+.2f})"
        for e in rows
    ]
    replaced = [
        f"{c['f1_difference']:+.1f} on {c['dataset']} ({c['f1_low']:+.1f} to {c['f1_high']:+.1f})"
        for ds in DATASETS
        if (c := probe_gate().comparison(ds, "state-probe-for-claim-check")) is not None
    ]
    return [
        "## The claim check against the model's state",
        "",
        "On a first step no passage is kept yet, so every step that names an entity makes the claim check retrieve:",
        "it ranks almost nothing there (about 0.50 for both labels above). For a wrong claim the state probe ranks",
        "better than",
        f"that ({'; '.join(parts)}), but it is not the best signal: on HotpotQA the free greedy signal ranks wrong",
        "claims better beyond the noise. End to end, the previous default without the claim check lost F1 on both",
        "datasets, inside the noise ([archived](archive/decision_rules_previous_default.md)), and with the probe in",
        "its place F1 changed by "
        + (", ".join(replaced) if replaced else "(not run yet)")
        + " (the next section). So the English-name check stays, and another language swaps its entity finder",
        "(`EntityFinder`, same page).",
        "",
    ]


def _cell(entry: dict | None) -> str:
    if entry is None:
        return "-"
    point, low, high = entry["probe"]
    return f"{point:.2f} ({low:.2f}-{high:.2f})"


def verdicts() -> list[str]:
    """The per-model verdicts ``seakr calibrate`` printed, from its ``--json`` output in ``runs/signals/verdicts/``."""
    files = sorted((ROOT / "runs" / "signals" / "verdicts").glob("*.json"))
    if not files:
        return []
    out = [
        "## The verdict per model (`seakr calibrate`)",
        "",
        "`seakr calibrate --dataset D --start 200 --limit 100 --rules default,state-probe` with each bundled model",
        "(k = 20, 100 tokens, the dataset's exemplars; vLLM, CPU, float32), its `--json` output in",
        "`runs/signals/verdicts/`. Lines 200-299 are the shipped profiles' calibration lines. Retrieval helps where",
        "single retrieval's F1 is above closed-book's; the AUROC of the gate's signals, of the free greedy signal and",
        "of the state probe (trained on the same questions, judged on held-out groups) for that label; the first-step",
        "retrieval rate on the half of the questions delta was not set on, against its target; how often retrieval",
        "turned a right closed-book answer wrong.",
        "",
        "| model | dataset | signal | AUROC: retrieval helps (95%) | knows? | rate: target / realized | harm |",
        "| --- | --- | --- | --- | --- | --- | ---: |",
    ]
    for path in files:
        profile = json.loads(path.read_text())
        learned = {v["signal"]: v for state in profile.get("rules", {}).values() if (v := state.get("verdict"))}
        for signal, v in {**profile.get("verdict", {}), **learned}.items():
            ci = "-" if v["auroc"] is None else f"{v['auroc']:.2f} ({v['auroc_low']:.2f}-{v['auroc_high']:.2f})"
            rate = "-" if v["target_rate"] is None else f"{v['target_rate']:.2f} / {v['realized_rate']:.2f}"
            out.append(
                f"| {profile['model']} | {profile['dataset']} | {signal} | {ci} | "
                f"{'yes' if v['informative'] else 'no'} | {rate} | {100 * v['harm_rate']:.0f}% |"
            )
    out += [
        "",
        "Where the gate's own signal does not know (its interval includes 0.5), a profile says so when it is used",
        "(`UninformativeGateWarning`) and what to use instead: one retrieval with SeaKR's re-ranking and final choice,",
        '`SeaKRConfig(mode="single_hop", retrieve="always")`. The state probe ships as a rule (`state-probe`) but in',
        "no preset: it is used only where its own cross-validated row above beats the free greedy signal.",
        "",
    ]
    return out


def probe_gate():  # noqa: ANN201 - the experiments.probe_gate module
    if str(ROOT) not in sys.path:  # run as `python experiments/gate_table.py`: the package is the root's experiments/
        sys.path.insert(0, str(ROOT))
    from experiments import probe_gate

    return probe_gate


def main() -> None:
    out = [
        "# What the first-step gate knows",
        "",
        "Generated by `python experiments/gate_table.py` from `runs/signals/*.jsonl` (`experiments/gate_signals.py`:",
        "SeaKR's first multi-hop step of lines 0-299 of each dataset, Qwen2.5-Coder-0.5B-Instruct on vLLM, CPU,",
        "float32, k = 10, 64 tokens, each dataset's exemplars) and the baselines' results on the same lines",
        "(`runs/signals/baselines/`); do not edit.",
        "",
        'AUROC (0.5 is chance; 95% bootstrap interval) of each signal, oriented "higher = more uncertain", for two',
        "labels: **retrieval helps** (single retrieval's F1 above CoT's on the question) and **claim wrong** (fewer",
        "than half of the first step's own content words occur in the question's gold supporting paragraphs; steps",
        "that add no word of their own are left out; a proxy, not a human judgement).",
        "",
    ]
    for ds in DATASETS:
        path = ROOT / "runs" / "signals" / f"{ds}.jsonl"
        if not path.exists():
            continue
        rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        firsts = [r for r in rows if "line" in r]
        questions = {}
        for i, line in enumerate((ROOT / "data" / f"{ds}_dev.jsonl").read_text().splitlines()):
            questions[i] = json.loads(line)
        single, cot = baseline_f1(ds, "single-retrieval"), baseline_f1(ds, "cot")
        helps = [(r, single[r["id"]] > cot[r["id"]]) for r in firsts if r["id"] in single and r["id"] in cot]
        wrong = [(r, w) for r in firsts if (w := claim_wrong(r["greedy"], questions[r["line"]])) is not None]
        c = costs(rows)
        out += [
            f"## {ds}",
            "",
            f"{len(firsts)} first steps. Retrieval helps on {sum(h for _, h in helps)} of {len(helps)} questions with "
            f"both baselines' results; the claim is wrong on {sum(w for _, w in wrong)} of {len(wrong)} steps that add "
            "words of their own.",
            "",
            "| signal | needs | on a plain vLLM server | AUROC: retrieval helps | AUROC: claim wrong |",
            "| --- | --- | --- | --- | --- |",
        ]
        from seakr_integrations.reasoning.entities import named_entities

        probe = {e["label"]: e for e in _probe_cv() if e["dataset"] == ds}
        cells = []
        for pairs in (helps, wrong):
            point, low, high = auroc_interval(
                [float(bool(named_entities(r["greedy"]))) for r, _ in pairs], [y for _, y in pairs]
            )
            cells.append(f"{point:.2f} ({low:.2f}-{high:.2f})")
        out.append(f"| {CLAIM_CHECK} | greedy only (English names) | yes | {cells[0]} | {cells[1]} |")
        if probe:
            cells = [_cell(probe.get(label)) for label in ("retrieval helps", "claim wrong")]
            out.append(
                f"| {PROBE} | greedy + its hidden-state read-out in the same call | no (needs seakr serve) | "
                f"{cells[0]} | {cells[1]} |"
            )
        for name, where, needs, estimator in SIGNALS:
            cells = []
            for pairs in (helps, wrong):
                scores = [value(r, where) for r, _ in pairs]
                if any(math.isnan(s) for s in scores):
                    cells.append("-")
                    continue
                point, low, high = auroc_interval(scores, [label for _, label in pairs])
                cells.append(f"{point:.2f} ({low:.2f}-{high:.2f})")
            out.append(f"| {name} | {needs} | {_on_plain_server(estimator)} | {cells[0]} | {cells[1]} |")
        out += ["", *_probe_differences(probe)] if probe else []
        out += [
            "",
            f"Cost per question of this first step, measured in the same run (batches of 16 questions): the greedy "
            f"step alone {c['greedy_s']:.2f} s and {c['greedy_tokens']:.0f} generated tokens; the greedy step with "
            f"its k samples and their read-outs {c['full_s']:.2f} s more and {c['full_tokens']:.0f} tokens (the "
            f"greedy step again included; it ran after the greedy-only call, so its prompt was cached); the prompt "
            f"probe {c['probe_s']:.2f} s more.",
            "",
        ]
    out += claim_check_against_state()
    out += probe_gate().section()
    out += verdicts()
    (ROOT / "docs" / "gate_signals.md").write_text("\n".join(out))
    print("\n".join(out))


if __name__ == "__main__":
    main()
