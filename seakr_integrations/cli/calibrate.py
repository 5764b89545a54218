"""``seakr calibrate --dataset FILE``: choose delta for a model on labelled questions and save it as a profile."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from seakr_integrations.cli import common
from seakr_integrations.cli.quiet import add_verbose_argument, own_stderr, quiet_command


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    cal = sub.add_parser(
        "calibrate",
        help="choose delta for a model on labelled questions (max F1 over a sweep, or a target retrieval rate) and "
        "save it as a profile",
    )
    common.add_question_arguments(cal, "labelled question file (not the questions you evaluate on)")
    cal.add_argument("--objective", choices=["f1", "rate"], default="f1", help="maximise F1, or reach --target-rate")
    cal.add_argument("--target-rate", type=float, default=None, help="fraction of first steps that should retrieve")
    cal.add_argument("--points", type=int, default=11, help="thresholds in the F1 sweep, plus always/never (11)")
    cal.add_argument(
        "--all-estimators",
        action="store_true",
        help="also save a profile for every other estimator, from the same LM calls (for the estimator ablations)",
    )
    cal.add_argument(
        "--cascade-agreement",
        type=float,
        default=None,
        help="the cascade band stored with delta: the widest whose decisions agree with the gate on this share of "
        "the first steps it decides, each side (default 0.9)",
    )
    cal.add_argument(
        "--probe",
        action="store_true",
        help="also train a linear probe on the first step's hidden state for 'retrieval helps' (the state-probe "
        "rule's), stored with delta; needs a back-end that reads hidden states",
    )
    cal.add_argument(
        "--no-verdict",
        action="store_true",
        help="skip judging the gate (its verdict needs closed-book and single-retrieval answers to the same "
        "questions: about three LM calls and one search more per question)",
    )
    cal.add_argument("--json", action="store_true", help="print the profile as JSON")
    common.add_seakr_arguments(cal)
    add_verbose_argument(cal)
    cal.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from seakr_integrations.backends.cached import CachedBackend
    from seakr_integrations.backends.openai_plain import HIDDEN_NEEDS
    from seakr_integrations.calibration import save_profile
    from seakr_integrations.evaluation.calibrate import calibrate_delta
    from seakr_integrations.uncertainty.registry import REGISTRY, estimator_names

    if args.objective == "rate" and args.target_rate is None:
        raise ValueError("--objective rate needs --target-rate R (the fraction of steps that should retrieve)")
    questions = common.load_questions(args)
    config = common.seakr_config(args)
    search = common.search_settings(args)
    retriever, _ = common.checked_retriever(args, questions)
    estimators = [config.estimator]
    if args.all_estimators:
        estimators += [e for e in estimator_names() if e != config.estimator]
    saved = []
    with quiet_command(args) as console, common.model_backend(args) as backend, own_stderr(console):
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
                probe=args.probe,
                **search,
                **({"agreement": args.cascade_agreement} if args.cascade_agreement is not None else {}),
            )
            saved.append((save_profile(profile, args.profile_dir), profile))
    if args.json:
        records = [{"profile": str(path), **profile.to_dict()} for path, profile in saved]
        print(json.dumps(records[0] if len(records) == 1 else records, indent=2))
        return 0
    for path, profile in saved:
        print_profile(path, profile)
    return 0


def print_profile(path: Path, profile) -> None:  # noqa: ANN001 - a DeltaProfile
    for row in profile.sweep:
        cells = [f"delta {row['delta']:9.4f}", f"first-step retrieval rate {row['first_step_retrieval_rate']:.2f}"]
        if "f1" in row:
            cells += [f"F1 {row['f1']:.3f}", f"EM {row['em']:.3f}", f"{row['retrievals_per_question']:.2f} retrievals"]
        print("  ".join(cells) + ("   <- chosen" if row.get("chosen") else ""))
    print(
        f"delta = {profile.delta:.4f} for {profile.model} "
        f"({'logprobs only' if profile.layer is None else f'layer {profile.layer}'}, {profile.source}, "
        f"{profile.estimator}, k={profile.k}) on {profile.questions} questions of {profile.dataset}; saved to {path}. "
        "In the default directory it is what SeaKRConfig() and seakr ask|eval use for this model and these settings "
        "(it wins over a profile shipped with the package); from another, pass --calibrated --profile-dir DIR or use "
        "SeaKRConfig.calibrated(backend, root=DIR). Its prompt settings: ("
        + ", ".join(f"{name}={value}" for name, value in profile.prompt.items())
        + ")."
    )
    print_verdicts(profile)


def print_verdicts(profile) -> None:  # noqa: ANN001 - a DeltaProfile
    """What the gate's signals know here, and what to do when the gate's own knows nothing."""
    from seakr_integrations.calibration import GATE_ALTERNATIVE
    from seakr_integrations.evaluation.verdict import MIN_QUESTIONS, GateVerdict

    if not profile.verdict and profile.questions < MIN_QUESTIONS:
        print(f"no verdict on the gate: {profile.questions} questions (at least {MIN_QUESTIONS} judge it)")
    for verdict in profile.verdict.values():
        print(GateVerdict(**verdict).summary())
    gate = profile.verdict.get(profile.estimator)
    if gate is not None and not gate["informative"]:
        print(f"So for this model and prompt: {GATE_ALTERNATIVE}")
