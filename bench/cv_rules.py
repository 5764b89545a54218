"""One rule at a time, for docs/results.md: a rule measured on the development fold against the default's run
(``fold0_lines``), and the answer rule replayed on SeaKR's and the baselines' runs (``option_lines``).  Read by
``bench/cv_report.py``, whose loaders and statistics these use."""

from __future__ import annotations

from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


FOLD0_RULES = {
    "cascade": ("seakr-no-cascade", "with the cascade", "without it", "With minus without"),
    "bridges": ("seakr-bridges", "the default", "with cover_bridge_entities", "With the rule minus the default"),
}
"""The rules measured on fold 0 against the development run: the method that differs from the default by that rule
alone, the two rows' labels, and how the paired difference is named."""


def fold0_lines(ds: str, rule: str) -> list[str]:
    """Fold 0's development run (the default, its final answers replayed with the default margin) beside the run
    that differs from it by one rule (``FOLD0_RULES``)."""
    from cv_report import FOLDS, LEFT_OUT, all_lines, gate_stages, interval, read, summary
    from final_rules import _pick

    from seakr_integrations.evaluation.scoring import score
    from seakr_integrations.reasoning import SeaKRConfig

    method, dev_label, other_label, difference = FOLD0_RULES[rule]
    fold0 = ROOT / "runs" / "cv" / f"{ds}_dev" / "fold0"
    lines0 = {i for i in range(300) if i % FOLDS == 0 and i not in LEFT_OUT.get(ds, set())}
    ids = {k for k, i in all_lines(ds).items() if i in lines0}
    dev = {k: v for k, v in read(fold0 / "seakr-both-finals.jsonl").items() if k in ids}
    other = {k: v for k, v in read(fold0 / f"{method}.jsonl").items() if k in ids}
    if not dev or not other:
        return ["Not run yet."]
    margin = SeaKRConfig().final_margin
    dev_f1 = {k: score(_pick(r["trace"], "uncertainty", margin) or "", r["golds"]).f1 for k, r in dev.items()}
    other_f1 = {k: r["f1"] for k, r in other.items()}
    common = sorted(set(dev_f1) & set(other))
    out = [
        "| fold 0 | questions | F1 | retrievals / q | LM calls / q | tokens / q | s / q "
        "| steps decided without samples |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    rows_of = {dev_label: (dev, dev_f1), other_label: (other, other_f1)}
    for name in (dev_label, other_label):
        rows, f1 = rows_of[name]
        s = summary([rows[k] for k in common])
        stages = gate_stages([rows[k] for k in common])
        sampled = stages["confident"] + stages["uncertain"]
        gated = sum(stages.values()) - stages["states the answer"]
        out.append(
            f"| {name} | {len(common)} | {100 * np.mean([f1[k] for k in common]):.1f} | {s['retrievals']:.2f} | "
            f"{s['lm_calls']:.1f} | {s['generated_tokens']:.0f} | {s['seconds']:.1f} | {gated - sampled} of {gated} |"
        )
    sign = 1 if rule == "cascade" else -1  # the cascade's row is the default: with minus without
    diffs = [sign * (dev_f1[k] - other_f1[k]) for k in common]
    low, high = interval(diffs)
    both_sampled = all(final_samples(r) == "always" for r in other.values())
    costs = (
        'Both runs sampled every final call (`final_samples="always"`), so their costs compare with each other; the '
        "default's own final step costs less."
        if both_sampled
        else f'The run {other_label} has the default\'s own final step (`final_samples="deciding"`: final answers '
        "sampled only where they differ), so its costs do not compare with the development run's (its final step draws "
        "fewer samples); the F1 compares as it is."
    )
    return out + [
        "",
        f"{difference}, paired: {100 * np.mean(diffs):+.1f} F1 ({100 * low:+.1f} to {100 * high:+.1f}). The default's "
        "run generated both final answers with their samples and its answers are replayed with the default final "
        f"margin {margin:g}, which changes no call. {costs}",
        "",
        "The two runs were made at different times on the shared 2-core machine, so their seconds per question also "
        "carry the machine's load at the time; LM calls and generated tokens do not.",
    ]


def final_samples(row: dict) -> str:
    """A result's ``final_samples`` setting; for a run made before the setting existed, what such runs did (the
    results files' own record of it, ``_ADDED_SETTINGS``)."""
    from seakr_integrations.evaluation.results import _ADDED_SETTINGS

    return (row.get("trace") or {}).get("config", {}).get("final_samples") or _ADDED_SETTINGS["final_samples"]


def option_lines(ds: str, ids: dict[str, int]) -> list[str]:
    """``answer_with_option`` on the development fold (the rule was chosen there) and, replayed on their answers, what
    it would do for the baselines: how much of SeaKR's lead it explains."""
    from cv_report import BASELINES, baseline, default_rows, interval, read
    from final_rules import replay
    from option_answers import replayed_answer

    from seakr_integrations.evaluation.scoring import score
    from seakr_integrations.reasoning import SeaKRConfig

    def f1_with(rows: list[dict], margin: float | None) -> tuple[float, float, int]:
        pairs = [replayed_answer(r, margin) for r in rows]
        before = [score(a, r["golds"]).f1 for (a, _), r in zip(pairs, rows, strict=True)]
        after = [score(o, r["golds"]).f1 for (_, o), r in zip(pairs, rows, strict=True)]
        return 100 * float(np.mean(before)), 100 * float(np.mean(after)), sum(a != o for a, o in pairs)

    dev = replay(ds)
    before, after, changed = f1_with(dev, SeaKRConfig().final_margin)
    out = [
        f"On the development fold ({len(dev)} questions, the default's run replayed) the rule changed {changed} "
        f"answers: F1 {before:.1f} without it, {after:.1f} with it. It makes no LM call, so the held-out folds' "
        "runs of the default made before it existed are replayed with it (`python bench/option_answers.py --write`; "
        "the runs as made are `seakr-no-options.jsonl`, the replays `seakr-both-finals.jsonl`), and the SeaKR rows "
        "above have it. The rule "
        "came from the development fold's traces, but its effect on the held-out folds was computed before the choice "
        "was written down, so for this rule the held-out estimate is not free of the choice.",
        "",
        "The same rule replayed on the baselines' answers (it needs no LM call there either):",
        "",
    ]
    for method in BASELINES:
        rows = [r for k, r in baseline(ds, method).items() if k in ids and "trace" in r]
        if rows:
            before, after, changed = f1_with(rows, None)
            out.append(f"* {method}: F1 {before:.1f} as run, {after:.1f} with the rule ({changed} answers changed)")
    ours = default_rows(ds, ids)[0]  # the rows of the table above
    single = {k: r for k, r in baseline(ds, "single-retrieval").items() if k in ours and "trace" in r}
    if single:
        diffs = [ours[k]["f1"] - score(replayed_answer(r, None)[1], r["golds"]).f1 for k, r in single.items()]
        as_run = np.mean([ours[k]["f1"] - r["f1"] for k, r in single.items()])
        low, high = interval(diffs)
        out += [
            "",
            f"SeaKR minus single retrieval with the same rule, paired: {100 * np.mean(diffs):+.1f} F1 "
            f"({100 * low:+.1f} to {100 * high:+.1f}) on {len(diffs)} questions, against {100 * as_run:+.1f} as run. "
            "Any RAG chain could apply the rule; the target above is read against the baselines as they were run.",
        ]
    bridges = ROOT / "runs" / "cv" / f"{ds}_dev" / "fold0" / "seakr-bridges.jsonl"
    if bridges.exists():
        rows = [r for k, r in read(bridges).items() if k in {r["id"] for r in dev}]
        before, after, _ = f1_with(rows, None)
        out += [
            "",
            f"`cover_bridge_entities` on fold 0 with this rule replayed too: F1 {after:.1f} ({before:.1f} without it).",
        ]
    return out
