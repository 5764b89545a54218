"""The training results the learned baselines share: ``cot`` and ``single-retrieval`` answers to the same training
questions, from which SKR-kNN takes its labels and the token gate its threshold."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from seakr_integrations.evaluation.results import finished_results, read_results

WITHOUT, WITH = "cot", "single-retrieval"
"""The answers without and with retrieval that the learned baselines choose between."""

Records = dict[str, dict[str, Any]]
"""Answered result records by question id."""


def training_records(train_dir: str | os.PathLike[str], learner: str) -> tuple[Records, Records, list[str]]:
    """The answered records of ``WITHOUT`` and ``WITH`` in ``train_dir`` and the ids both hold, in file order.

    Raises:
        FileNotFoundError: A results file is missing; the message says what ``learner`` needs and the command.
        ValueError: The two files share no answered question.
    """
    root = Path(train_dir)
    records = []
    for name in (WITHOUT, WITH):
        path = finished_results(root / f"{name}.jsonl")
        if not path.is_file():
            raise FileNotFoundError(
                f"{path} is missing: {learner} learns from {WITHOUT} and {WITH} results on training questions; make "
                f"them with `seakr eval --dataset TRAIN.jsonl --method {WITHOUT} --method {WITH} --out-dir {root}`"
            )
        records.append({r["id"]: r for r in read_results(path)[1] if "id" in r and not r.get("error")})
    without, with_ = records
    shared = [i for i in without if i in with_]
    if not shared:
        raise ValueError(f"{root}: {WITHOUT}.jsonl and {WITH}.jsonl share no answered question; run both on one split")
    return without, with_, shared
