"""A linear probe on the first step's hidden state, cross-validated with folds fixed in advance (issue 66).

Folds: line ``i`` of a dataset is in fold ``i % 5`` (the folds of ``docs/archive/cv_protocol.md``).  For each fold
held out in turn, the probe's source (MLP output or residual stream), layer and L2 penalty are chosen by an inner
cross-validation over the other four folds (each held out in turn), fitted on those four, and scored on the held-out
fold: no question is ever scored by a probe trained on it.  The held-out scores of the five folds are pooled into
one AUROC with a bootstrap interval, beside the free greedy signal (1 - least token probability) and EigenScore on
the same questions (with the paired bootstrap differences from both), for the labels of
``experiments/gate_table.py`` ("retrieval helps", "claim wrong").

    python experiments/probe_cv.py --vectors /tmp/probe        # reads /tmp/probe/DATASET.npz (probe_vectors.py)
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from seakr_integrations.evaluation.auroc import auroc, auroc_interval, bootstrap
from seakr_integrations.evaluation.probe_fit import cross_validated

ROOT = Path(__file__).resolve().parents[1]
FOLDS = 5


def paired_difference(first: np.ndarray, second: np.ndarray, labels: np.ndarray) -> tuple[float, float, float]:
    """AUROC of ``first`` minus AUROC of ``second`` on the same questions, with a paired bootstrap interval (the same
    resampled questions score both)."""
    return bootstrap(lambda i: auroc(first[i], labels[i]) - auroc(second[i], labels[i]), labels)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--vectors", type=Path, required=True, help="folder of probe_vectors.py's DATASET.npz")
    parser.add_argument("--layers", type=int, nargs="+", default=None, help="layers to choose from (default: all)")
    parser.add_argument("--out", type=Path, default=None, help="write the numbers as JSON here")
    args = parser.parse_args()
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from experiments.gate_table import baseline_f1, claim_wrong

    report = []
    for ds in ("hotpotqa", "2wiki"):
        data = np.load(args.vectors / f"{ds}.npz")
        lines = data["lines"]
        vectors = {"mlp": data["mlp"], "residual": data["residual"]}
        layers = args.layers or list(range(vectors["mlp"].shape[1]))
        rows = {
            r["line"]: r
            for r in map(json.loads, (ROOT / "runs" / "signals" / f"{ds}.jsonl").read_text().splitlines())
            if "line" in r
        }
        questions = [json.loads(x) for x in (ROOT / "data" / f"{ds}_dev.jsonl").read_text().splitlines()]
        cot, single = baseline_f1(ds, "cot"), baseline_f1(ds, "single-retrieval")
        for label in ("retrieval helps", "claim wrong"):
            keep, y = [], []
            for k, line in enumerate(lines):
                row = rows[int(line)]
                if label == "retrieval helps":
                    if row["id"] not in cot or row["id"] not in single:
                        continue
                    value = single[row["id"]] > cot[row["id"]]
                else:
                    value = claim_wrong(row["greedy"], questions[int(line)])
                    if value is None:
                        continue
                keep.append(k)
                y.append(bool(value))
            idx, labels = np.array(keep), np.array(y)
            sub = {s: v[idx] for s, v in vectors.items()}
            probe, picked = cross_validated(sub, labels, lines[idx] % FOLDS, layers=layers)
            choices = [{"fold": f, "source": c.source, "layer": c.layer, "penalty": c.penalty,
                        "inner_auroc": round(c.inner_auroc, 3)} for f, c in enumerate(picked)]  # fmt: skip
            free = np.array([rows[int(lines[k])]["cheap"]["one_minus_min_prob"] for k in idx], dtype=float)
            eigen = np.array([rows[int(lines[k])]["scores"]["eigenscore"] or np.inf for k in idx], dtype=float)
            entry = {"dataset": ds, "label": label, "questions": len(labels), "positives": int(labels.sum()),
                     "probe": auroc_interval(probe, labels), "min_token_prob": auroc_interval(free, labels),
                     "eigenscore": auroc_interval(eigen, labels), "choices": choices,
                     "probe_minus_eigenscore": paired_difference(probe, eigen, labels),
                     "probe_minus_min_token_prob": paired_difference(probe, free, labels)}  # fmt: skip
            report.append(entry)
            print(
                f"{ds} {label}: {len(labels)} q ({labels.sum()} positive); AUROC probe {entry['probe'][0]:.3f} "
                f"({entry['probe'][1]:.2f}-{entry['probe'][2]:.2f}), 1 - min p {entry['min_token_prob'][0]:.3f}, "
                f"EigenScore {entry['eigenscore'][0]:.3f}; choices {choices}",
                flush=True,
            )
    if args.out:
        args.out.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
