"""``seakr calibrate``'s checks of its own options, made before a model loads or a request is sent: a calibration
spends many LM calls, so nothing that could fail at its end is left to fail there."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

OPTIONS = {"objective": "--objective", "target_rate": "--target-rate", "points": "--points"}
"""``calibrate_delta``'s parameters as the command line spells them (for the messages of its checks)."""


def check_arguments(args: argparse.Namespace) -> None:
    """The options that need neither the questions nor the model: the objective and its target rate, the sweep's
    points and the profile directory.

    Raises:
        ValueError: Naming the option, what is wrong and how to fix it.
    """
    from seakr_integrations.evaluation.calibrate import check_settings

    check_settings(objective=args.objective, target_rate=args.target_rate, points=args.points, names=OPTIONS)
    check_profile_dir(args.profile_dir)


def profile_dir(root: Path | None) -> Path:
    """The directory ``save_profile`` writes to for ``--profile-dir`` ``root`` (its default when ``None``)."""
    from seakr_integrations.calibration import profile_path

    return profile_path("model", None, "mlp", "estimator", 1, root).parent  # any key: only the directory matters


def check_profile_dir(root: Path | None) -> None:
    """Refuse a profile directory the profile could not be saved in: a file, under a file, or not writable (where
    it does not exist yet, the nearest folder above it must take a new one).

    Raises:
        ValueError: Naming the directory and what to do.
    """
    directory = profile_dir(root)
    given = f"--profile-dir {directory}" if root is not None else f"the profile directory {directory} (the default)"
    fix = "name a directory that can be written" if root is not None else "pass --profile-dir DIR"
    existing = directory
    while not existing.exists() and existing.parent != existing:
        existing = existing.parent
    if not existing.is_dir():
        what = "is a file" if existing == directory else f"cannot be created: {existing} is a file"
        raise ValueError(f"{given} {what}, not a directory; {fix} (one that does not exist yet is created)")
    if not os.access(existing, os.W_OK | os.X_OK):
        what = "is not writable" if existing == directory else f"cannot be created: {existing} is not writable"
        raise ValueError(f"{given} {what}; {fix}")


def check_learning(config: Any, questions: list) -> None:  # noqa: ANN401 - a SeaKRConfig
    """What a rule of the config refuses to learn from these questions (a state probe on too few), before the model
    loads; ``calibrate_delta`` checks the back-end's part (hidden states) before its first LM call.

    Raises:
        ValueError: In the rule's words.
    """
    from seakr_integrations.evaluation import calibration_evidence as evidence

    evidence.check_learning(config.rules, evidence.CalibrationEvidence(None, None, config, questions))
