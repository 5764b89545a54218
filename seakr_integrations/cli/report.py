"""``seakr report RESULTS...``: turn ``seakr eval`` results files into a Markdown report with tables and
plots.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

__all__ = ["add_parser", "run"]


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``seakr report`` and its options to ``sub``."""
    rep = sub.add_parser("report", help="turn seakr eval results files into a Markdown report with tables and plots")
    rep.add_argument("results", nargs="+", help="results files, or directories holding them (searched recursively)")
    rep.add_argument("--out", default="docs/results.md", help="the report (PNG plots go next to it)")
    rep.add_argument("--profiles", nargs="*", help="calibration profiles (JSON) whose delta sweeps to plot")
    rep.add_argument("--commands", default=None, help="a file with the exact commands that produced the results")
    rep.add_argument("--title", default="SeaKR evaluation results")
    rep.add_argument("--notes", default=None, help="a Markdown file of analysis to put after the title")
    rep.add_argument(
        "--confirmation",
        nargs="*",
        default=[],
        help="results of the confirmation run (questions no choice was made on): their section goes first",
    )
    rep.add_argument("--confirmation-notes", default=None, help="a Markdown file of analysis for that section")
    rep.add_argument(
        "--examples", type=int, default=3, help="questions SeaKR lost to show per dataset, with its decisions (3)"
    )
    rep.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run ``seakr report``; the exit status."""
    from seakr_integrations.evaluation.method_runs import load_runs
    from seakr_integrations.evaluation.report import write_report

    runs = load_runs(args.results)
    profiles = []
    for path in args.profiles or []:
        try:
            profiles.append(json.loads(Path(path).read_text(encoding="utf-8")))
        except json.JSONDecodeError as err:
            raise ValueError(f"{path}: not a calibration profile (invalid JSON: {err.msg})") from None
    commands = Path(args.commands).read_text(encoding="utf-8") if args.commands else ""
    notes = Path(args.notes).read_text(encoding="utf-8") if args.notes else ""
    confirmation = load_runs(args.confirmation) if args.confirmation else []
    confirmation_notes = Path(args.confirmation_notes).read_text(encoding="utf-8") if args.confirmation_notes else ""
    out = write_report(
        runs,
        args.out,
        profiles=profiles,
        title=args.title,
        commands=commands,
        notes=notes,
        examples=args.examples,
        confirmation=confirmation,
        confirmation_notes=confirmation_notes,
    )
    print(f"wrote {out} from {len(runs)} results file(s), plots next to it")
    return 0
