"""``seakr calibrate --dataset FILE``: choose delta for a model on labelled questions and save it as a profile, with
what each rule of ``--rules`` that learns (the token cascade's band, the state probe) learned beside it."""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any, TextIO

from seakr_integrations.cli.backend import model_backend
from seakr_integrations.cli.calibrate_checks import check_arguments, check_learning, profile_dir
from seakr_integrations.cli.config_options import seakr_config
from seakr_integrations.cli.questions import add_question_arguments, load_questions
from seakr_integrations.cli.quiet import add_verbose_argument, own_stderr, quiet_command
from seakr_integrations.cli.retriever_options import checked_retriever, search_settings
from seakr_integrations.cli.seakr_options import add_seakr_arguments


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from seakr_integrations.evaluation.calibrate import MIN_POINTS

    cal = sub.add_parser(
        "calibrate",
        help="choose delta for a model on labelled questions (max F1 over a sweep, or a target retrieval rate) and "
        "save it as a profile, with what the rules that learn learned (--rules default,token-cascade,state-probe: the "
        "cascade band, the state probe)",
    )
    add_question_arguments(cal, "labelled question file (not the questions you evaluate on)")
    cal.add_argument("--objective", choices=["f1", "rate"], default="f1", help="maximise F1, or reach --target-rate")
    cal.add_argument(
        "--target-rate",
        type=float,
        default=None,
        help="fraction of first steps that should retrieve, in [0, 1]: with --objective rate, what delta is set for; "
        "with f1, only the rate the verdict compares with and the state-probe rule's threshold",
    )
    cal.add_argument(
        "--points",
        type=int,
        default=11,
        help=f"thresholds in the sweep, at least {MIN_POINTS}, plus always/never (default 11)",
    )
    cal.add_argument(
        "--all-estimators",
        action="store_true",
        help="also save a profile for every other estimator, from the same LM calls (for the estimator ablations)",
    )
    cal.add_argument(
        "--no-verdict",
        action="store_true",
        help="skip judging the gate (its verdict needs closed-book and single-retrieval answers to the same "
        "questions: about three LM calls and one search more per question)",
    )
    cal.add_argument("--json", action="store_true", help="print the profile as JSON")
    add_seakr_arguments(cal)
    add_verbose_argument(cal)
    cal.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from seakr_integrations.backends.cached import CachedBackend
    from seakr_integrations.backends.openai_plain import HIDDEN_NEEDS
    from seakr_integrations.calibration import save_profile
    from seakr_integrations.evaluation.calibrate import CalibrationIncomplete, calibrate_delta
    from seakr_integrations.uncertainty.registry import REGISTRY, estimator_names

    check_arguments(args)  # every option, before the questions are read or a model loads
    questions = load_questions(args)
    config = seakr_config(args)
    check_learning(config, questions)  # a rule that cannot learn from these questions: refused before the model loads
    search = search_settings(args)
    retriever, _ = checked_retriever(args, questions)
    estimators = [config.estimator]
    if args.all_estimators:
        estimators += [e for e in estimator_names() if e != config.estimator]
    saved: list[tuple[Path, Any]] = []
    unsaved: tuple[Any, str] | None = None
    with quiet_command(args) as console, model_backend(args) as backend, own_stderr(console):
        shared = CachedBackend(backend)  # every estimator reads the same calls: each is generated once
        for estimator in estimators:
            if args.all_estimators and not backend.reads_hidden_states and REGISTRY[estimator].needs & HIDDEN_NEEDS:
                print(f"seakr: {estimator}: skipped, the server returns logprobs only", file=sys.stderr)
                continue
            if "logits" in REGISTRY[estimator].needs and not backend.supports_logits:
                print(
                    f"seakr: {estimator}: skipped, {args.backend} returns no logits (use --backend hf)", file=sys.stderr
                )
                continue
            try:
                profile = calibrate_delta(
                    shared,
                    retriever,
                    questions,
                    config.with_(estimator=estimator),
                    objective=args.objective,
                    target_rate=args.target_rate,
                    points=args.points,
                    dataset=os.path.basename(args.dataset),
                    progress=not args.quiet,
                    verdict=not args.no_verdict,
                    **search,
                )
            except CalibrationIncomplete as err:  # raised here, so that the engine's log tail is shown with it
                raise keep(err.partial, args, saved, str(err), whole=False) from err
            try:
                saved.append((save_profile(profile, args.profile_dir), profile))
            except (OSError, ValueError) as err:
                unsaved = (profile, f"could not save the profile in {profile_dir(args.profile_dir)}: {err}")
                break
    if unsaved is not None:
        profile, why = unsaved
        raise keep(profile, args, saved, why, whole=True)
    if args.json:
        records = [{"profile": str(path), **profile.to_dict()} for path, profile in saved]
        print(json.dumps(records[0] if len(records) == 1 else records, indent=2))
        return 0
    for path, profile in saved:
        print_profile(path, profile)
    return 0


def keep(profile: Any, args: argparse.Namespace, saved: list, why: str, *, whole: bool) -> RuntimeError:  # noqa: ANN401
    """What a calibration that failed at its end still gives: the profiles saved before it and its own sweep and
    delta printed, the profile written where it can be (the profile directory, else the temporary one, under a name
    no profile lookup reads).  Returns the error to raise: ``why``, where the profile is kept, and how to use it.

    Args:
        profile: The profile to keep: complete (``whole``: only saving it failed) or the sweep's part of it.
    """
    out = sys.stderr if args.json else sys.stdout  # --json's standard output stays clean for its reader
    for path, done in saved:
        print_profile(path, done, file=out)
    print_sweep(profile, file=out)
    print(f"delta = {profile.delta:.4f} {describe(profile)}: not saved as a profile", file=out)
    if whole:
        print_verdicts(profile, file=out)
    kept = write_kept(profile, args.profile_dir, "unsaved" if whole else "partial")
    if kept is None:
        where = "it could not be written anywhere either: the sweep printed above is what is left"
    elif whole:
        target = profile_dir(args.profile_dir) / f"{profile.key}.json"
        where = f"the profile is kept whole in {kept}: rename it to {target} once that can be written, and "
        where += (
            "--calibrated uses it"
            if args.profile_dir is None
            else f"--calibrated --profile-dir {args.profile_dir} uses it"
        )
    else:
        where = f"the sweep and delta are kept in {kept} (not a profile: what failed is missing from it)"
    return RuntimeError(f"{why}; {where}; or pass --delta {profile.delta:.4f} to use this delta as it is")


def write_kept(profile: Any, root: Path | None, tag: str) -> Path | None:  # noqa: ANN401 - a DeltaProfile
    """Write ``profile`` as ``<key>.<tag>.*.json`` in the profile directory, else the temporary one; ``None`` when
    neither takes it.  NaN is written as it is: keeping the numbers matters more than strict JSON here."""
    for directory in (profile_dir(root), Path(tempfile.gettempdir())):
        try:
            directory.mkdir(parents=True, exist_ok=True)
            fd, name = tempfile.mkstemp(prefix=f"{profile.key}.{tag}.", suffix=".json", dir=directory)
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(profile.to_dict(), f, indent=2)
                f.write("\n")
        except (OSError, TypeError, ValueError):
            continue
        return Path(name)
    return None


def describe(profile: Any) -> str:  # noqa: ANN401 - a DeltaProfile
    """``for MODEL (read-out, source, estimator, k) on N questions of DATASET``."""
    readout = "logprobs only" if profile.layer is None else f"layer {profile.layer}"
    return (
        f"for {profile.model} ({readout}, {profile.source}, {profile.estimator}, k={profile.k}) on "
        f"{profile.questions} questions of {profile.dataset}"
    )


def print_sweep(profile: Any, file: TextIO | None = None) -> None:  # noqa: ANN401 - a DeltaProfile
    """One line per delta the sweep tried, the chosen one marked."""
    for row in profile.sweep:
        cells = [f"delta {row['delta']:9.4f}", f"first-step retrieval rate {row['first_step_retrieval_rate']:.2f}"]
        if "f1" in row:
            cells += [f"F1 {row['f1']:.3f}", f"EM {row['em']:.3f}", f"{row['retrievals_per_question']:.2f} retrievals"]
        print("  ".join(cells) + ("   <- chosen" if row.get("chosen") else ""), file=file)


def print_profile(path: Path, profile: Any, file: TextIO | None = None) -> None:  # noqa: ANN401 - a DeltaProfile
    print_sweep(profile, file=file)
    print(
        f"delta = {profile.delta:.4f} {describe(profile)}; saved to {path}. "
        "In the default directory it is what SeaKRConfig() and seakr ask|eval use for this model and these settings "
        "(it wins over a profile shipped with the package); from another, pass --calibrated --profile-dir DIR or use "
        "calibrated_config(backend, config, root=DIR) (seakr_integrations.config_resolution). Its prompt settings: ("
        + ", ".join(f"{name}={value}" for name, value in profile.prompt.items())
        + ").",
        file=file,
    )
    print_verdicts(profile, file=file)


def print_verdicts(profile: Any, file: TextIO | None = None) -> None:  # noqa: ANN401 - a DeltaProfile
    """What the gate's signals know here, and what to do when the gate's own knows nothing."""
    from seakr_integrations.calibration import GATE_ALTERNATIVE
    from seakr_integrations.evaluation.verdict import MIN_QUESTIONS, GateVerdict

    if not profile.verdict and profile.questions < MIN_QUESTIONS:
        print(f"no verdict on the gate: {profile.questions} questions (at least {MIN_QUESTIONS} judge it)", file=file)
    learned = [state["verdict"] for state in profile.rules.values() if "verdict" in state]  # a rule's own signal
    for verdict in [*profile.verdict.values(), *learned]:
        print(GateVerdict(**verdict).summary(), file=file)
    gate = profile.verdict.get(profile.estimator)
    if gate is not None and not gate["informative"]:
        print(f"So for this model and prompt: {GATE_ALTERNATIVE}", file=file)
