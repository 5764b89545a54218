"""``seakr calibrate``'s checks of its own options, made before a model loads or a request is sent: a calibration
spends many LM calls, so nothing that could fail at its end is left to fail there."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

OPTIONS = {
    "objective": "--objective",
    "target_rate": "--target-rate",
    "points": "--points",
    "agreement": "--cascade-agreement",
    "probe": "--probe",
}
"""``calibrate_delta``'s parameters as the command line spells them (for the messages of its checks)."""


def check_arguments(args: argparse.Namespace) -> None:
    """The options that need neither the questions nor the model: the objective and its target rate, the sweep's
    points, the cascade agreement's range and the profile directory.

    Raises:
        ValueError: Naming the option, what is wrong and how to fix it.
    """
    from seakr_integrations.evaluation.calibrate import CASCADE_AGREEMENT, check_settings

    agreement = CASCADE_AGREEMENT if args.cascade_agreement is None else args.cascade_agreement
    check_settings(
        objective=args.objective, target_rate=args.target_rate, points=args.points, agreement=agreement, names=OPTIONS
    )
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


def check_questions(args: argparse.Namespace, questions: list) -> None:
    """``--probe`` with too few questions to train one (``MIN_PROBE_QUESTIONS``)."""
    from seakr_integrations.evaluation.calibrate import check_probe_questions

    if args.probe:
        check_probe_questions(len(questions), names=OPTIONS)


def check_rules(args: argparse.Namespace, config: Any) -> None:  # noqa: ANN401 - a SeaKRConfig
    """``--cascade-agreement`` without the token-cascade rule, whose band it sets (refused as ``--cascade-band``
    is: it would change nothing)."""
    if args.cascade_agreement is None or config.rule_set.reads().screen is not None:
        return
    given = f"--rules {args.rules!r}" if args.rules is not None else f"the {getattr(args, 'preset', 'default')} preset"
    raise ValueError(
        f"--cascade-agreement sets the band of the token-cascade rule, which {given} leaves out: add it "
        "(--rules default,token-cascade), or drop --cascade-agreement"
    )


def check_backend(args: argparse.Namespace, backend: Any) -> None:  # noqa: ANN401 - a SelfAwareBackend
    """``--probe`` on a back-end that reads no hidden states (a plain OpenAI-compatible server): known once the
    back-end is built (a server says what it is when connected), before the first LM call."""
    from seakr_integrations.evaluation.calibrate import check_probe_backend

    if args.probe:
        check_probe_backend(backend, names=OPTIONS)
