"""Replay ``SeaKRConfig.answer_with_option`` on recorded runs: the rule changes no LM call, only which answer a
question that offers options ("..., X or Y?") gets, so a run's traces give its answers exactly.

For each results file given (default: the development fold's ``seakr-both-finals`` runs, their final answers replayed
with the default final margin, as ``bench/final_rules.py`` does), prints F1 with and without the rule, the questions
it changed and the paired difference with its bootstrap interval.

    python bench/option_answers.py [RESULTS.jsonl ...]
    python bench/option_answers.py --write

``--write`` turns each held-out fold's run of the default made before the rule existed into the default's run:
``runs/cv/DATASET_dev/foldJ/seakr.jsonl`` is renamed ``seakr-no-options.jsonl`` (its header saying so) and a new
``seakr.jsonl`` holds the same rows with the rule's answers, scores and header (``"replayed"`` names the source).
Costs stay as they were: the rule makes no call.  (Those replays were later renamed ``seakr-both-finals.jsonl``, the
default's final step having changed since: ``docs/cv_protocol.md``.)
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).parent))


def replayed_answer(row: dict, margin: float | None) -> tuple[str, str]:
    """The row's answer (its finals re-chosen with ``margin`` when given) and the answer with the rule."""
    from final_rules import _pick

    from seakr_integrations.reasoning.entities import option_answer
    from seakr_integrations.retrieval.passage import Passage

    trace = row["trace"]
    answer = (_pick(trace, "uncertainty", margin) if margin is not None else row["prediction"]) or ""
    passages = [Passage(id=p["id"], title=p.get("title", ""), text=p["text"]) for p in trace.get("passages", [])]
    alternatives = [f.get("answer") or "" for f in trace["finals"].values() if (f.get("answer") or "") != answer]
    return answer, option_answer(row["question"], answer, passages, alternatives)


def interval(values: list[float], draws: int = 2000) -> tuple[float, float]:
    rng = random.Random(0)
    means = sorted(sum(rng.choices(values, k=len(values))) / len(values) for _ in range(draws))
    return means[int(0.025 * draws)], means[int(0.975 * draws) - 1]


def write_replays() -> None:
    from seakr_integrations.evaluation.results import config_fingerprint
    from seakr_integrations.evaluation.scoring import score

    for path in sorted((ROOT / "runs" / "cv").glob("*_dev/fold[1-9]/seakr.jsonl")):
        raw = [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        header, rows = json.loads(raw[0]), [json.loads(line) for line in raw[1:]]
        if header["config"]["seakr"].get("answer_with_option"):
            continue  # already the default's run
        source = path.with_name("seakr-no-options.jsonl")
        old = {**header, "config": {**header["config"], "method": "seakr-no-options"}}
        old["config"]["seakr"] = {**old["config"]["seakr"], "answer_with_option": False}
        old["fingerprint"] = config_fingerprint(old["config"])
        new = {**header, "config": {**header["config"]}}
        new["config"]["seakr"] = {**new["config"]["seakr"], "answer_with_option": True}
        new["fingerprint"] = config_fingerprint(new["config"])
        new["replayed"] = {"from": source.name, "by": "bench/option_answers.py", "rule": "answer_with_option"}
        replayed = []
        for r in rows:
            if "trace" not in r:  # a failed question stays failed
                replayed.append(r)
                continue
            _, option = replayed_answer(r, None)
            s = score(option, r["golds"])
            replayed.append(
                {**r, "prediction": option, "em": s.em, "f1": s.f1, "trace": {**r["trace"], "answer": option}}
            )
        source.write_text("".join(json.dumps(x, ensure_ascii=False) + "\n" for x in [old, *rows]))
        path.write_text("".join(json.dumps(x, ensure_ascii=False) + "\n" for x in [new, *replayed]))
        print(f"{path.relative_to(ROOT)}: replayed from {source.name}")


def main() -> None:
    from final_rules import replay

    if sys.argv[1:] == ["--write"]:
        write_replays()
        return
    from seakr_integrations.evaluation.scoring import score
    from seakr_integrations.reasoning import SeaKRConfig

    given = [Path(p).resolve() for p in sys.argv[1:]]
    paths = given or sorted((ROOT / "runs" / "cv").glob("*_dev/fold0/seakr-both-finals.jsonl"))
    for path in paths:
        margin = SeaKRConfig().final_margin if path.name == "seakr-both-finals.jsonl" else None
        if margin is not None:  # the development fold, without its smoke-test lines (as final_rules.py reads it)
            rows = replay(path.parents[1].name.removesuffix("_dev"))
        else:
            rows = [json.loads(line) for line in path.read_text().splitlines()[1:] if line.strip()]
            rows = [r for r in rows if "trace" in r]
        before, after, changed = [], [], 0
        for r in rows:
            answer, option = replayed_answer(r, margin)
            before.append(score(answer, r["golds"]).f1)
            after.append(score(option, r["golds"]).f1)
            changed += option != answer
        diffs = [a - b for a, b in zip(after, before, strict=True)]
        low, high = interval(diffs)
        n = len(rows)
        paired = f"paired {100 * sum(diffs) / n:+.1f}, 95% {100 * low:+.1f} to {100 * high:+.1f}"
        print(
            f"{path.relative_to(ROOT)}: {n} questions, {changed} answers changed; F1 {100 * sum(before) / n:.1f} -> "
            f"{100 * sum(after) / n:.1f} ({paired})"
        )


if __name__ == "__main__":
    main()
