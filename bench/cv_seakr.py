"""SeaKR on each held-out fold, calibrated on the other four (the protocol of docs/cv_protocol.md).

For held-out fold j of a dataset (its lines i with i % 5 == j), delta and the cascade band are calibrated on the
first-step readings of the other folds (``runs/signals/DATASET.jsonl``, from ``bench/gate_signals.py``), exactly as
``seakr calibrate`` does (delta at a first-step retrieval rate of 0.5; the band by ``cascade_band``), and the method
then answers fold j's questions with them.  Results go to ``runs/cv/DATASET_dev/foldJ/METHOD.jsonl`` (resumable,
like ``seakr eval``); each fold's calibration and its held-out first-step retrieval rate to
``runs/cv/DATASET_dev/calibration.json``.

    python bench/cv_seakr.py --dataset hotpotqa [--method seakr] [--folds 0 1 2 3 4]

Runs on the evaluation's back-end: Qwen2.5-Coder-0.5B-Instruct on vLLM (CPU, float32 unless ``--dtype`` says
otherwise; delta and the band stay those calibrated in float32), k = 10, 64 tokens.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
FOLDS = 5
TARGET_RATE = 0.5


def fold_of(line: int) -> int:
    return line % FOLDS


def read_signals(dataset: str) -> dict[int, dict]:
    path = ROOT / "runs" / "signals" / f"{dataset}.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return {r["line"]: r for r in rows if "line" in r}


CASCADE_SIGNALS = {"perplexity": ("scores", "perplexity"), "min_token_prob": ("cheap", "one_minus_min_prob")}
"""The greedy-only signals each fold chooses its cascade estimator from, and where gate_signals stored them."""


def calibrate_fold(signals: dict[int, dict], fold: int) -> dict:
    """delta, the cascade estimator and its band, and the held-out first-step rate for held-out ``fold``, from the
    other folds' first steps."""
    from seakr_integrations.evaluation.calibrate import cascade_band

    def u(row: dict) -> float:
        value = row["scores"]["eigenscore"]
        return np.inf if value is None else float(value)

    def screen(row: dict, where: tuple[str, str]) -> float:
        value = row[where[0]][where[1]]
        return np.inf if value is None else float(value)

    train = [r for line, r in sorted(signals.items()) if fold_of(line) != fold]
    test = [r for line, r in sorted(signals.items()) if fold_of(line) == fold]
    finite = [u(r) for r in train if np.isfinite(u(r))]
    delta = float(np.quantile(finite, 1.0 - TARGET_RATE))  # as calibrate_delta's "rate" objective
    bands = {
        name: cascade_band([screen(r, where) for r in train], [u(r) for r in train], delta)
        for name, where in CASCADE_SIGNALS.items()
    }
    estimator = max(bands, key=lambda name: bands[name]["decided"])
    held_out = [not (u(r) <= delta) for r in test]
    return {
        "fold": fold,
        "train_questions": len(train),
        "delta": delta,
        "cascade": {"estimator": estimator, **bands[estimator]},
        "cascade_candidates": bands,
        "held_out_questions": len(test),
        "held_out_first_step_rate": float(np.mean(held_out)),
        "target_rate": TARGET_RATE,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", required=True, choices=["hotpotqa", "2wiki"])
    parser.add_argument("--method", default="seakr")
    parser.add_argument("--folds", type=int, nargs="+", default=list(range(FOLDS)))
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--out", type=Path, default=ROOT / "runs" / "cv", help="results root (default runs/cv)")
    parser.add_argument("--dtype", default="float32", help="the weights' precision (default float32)")
    args = parser.parse_args()

    from seakr_integrations.backends.loading import load_backend
    from seakr_integrations.cli.common import quiet_vllm_start
    from seakr_integrations.demo import cached_index
    from seakr_integrations.evaluation import ResultsFile, evaluate, make_method, read_questions
    from seakr_integrations.evaluation.methods import method_settings
    from seakr_integrations.reasoning import SeaKRConfig

    ds = args.dataset
    signals = read_signals(ds)
    questions = read_questions(ROOT / "data" / f"{ds}_dev.jsonl").questions
    missing = [i for i in range(300) if i not in signals]
    if missing:
        raise SystemExit(f"runs/signals/{ds}.jsonl lacks lines {missing[:5]}...: run bench/gate_signals.py first")
    out_dir = args.out / f"{ds}_dev"
    out_dir.mkdir(parents=True, exist_ok=True)
    calibrations = [calibrate_fold(signals, j) for j in range(FOLDS)]
    (out_dir / "calibration.json").write_text(json.dumps(calibrations, indent=2) + "\n")
    corpus = ROOT / "data" / f"corpus_{ds}.jsonl"
    retriever = cached_index(corpus, progress=False)
    quiet_vllm_start()
    with load_backend("vllm", "qwen", dtype=args.dtype) as backend:
        for j in args.folds:
            cal = calibrations[j]
            changes = method_settings(args.method)
            cascade = {"cascade_estimator": cal["cascade"]["estimator"], "cascade_band": tuple(cal["cascade"]["band"])}
            if "cascade_estimator" in changes:  # an ablation without the cascade
                cascade = {"cascade_estimator": None, "cascade_band": None}
            config = SeaKRConfig(k=10, max_tokens=64, exemplar_style=ds, delta=cal["delta"], **cascade)
            method = make_method(args.method, backend, retriever, config)
            setup = {
                **method.describe(),
                "dataset": f"{ds}_dev.jsonl",
                "lines": f"i % {FOLDS} == {j}",
                "retriever": {"bm25_corpus": corpus.name},
                "model": "qwen",
                "backend": "vllm",
                "dtype": args.dtype,
            }
            fold_questions = [q for i, q in enumerate(questions[:300]) if fold_of(i) == j]
            path = out_dir / f"fold{j}" / f"{args.method}.jsonl"
            path.parent.mkdir(parents=True, exist_ok=True)
            with ResultsFile.open(path, setup) as results:
                backend.prefill = type(backend.prefill)()
                summary = evaluate(method, fold_questions, results, batch_size=args.batch_size, progress=False)
            prefill = out_dir / f"fold{j}" / f"{args.method}.prefill.json"
            prefill.write_text(json.dumps(backend.prefill.to_dict(), indent=2) + "\n")
            print(
                f"{ds} fold {j} {args.method}: F1 {summary.f1:.3f} EM {summary.em:.3f} ({summary.questions} q; "
                f"{summary.lm_calls:.1f} LM calls, {summary.generated_tokens:.0f} tokens, {summary.seconds:.1f} s)",
                flush=True,
            )


if __name__ == "__main__":
    main()
