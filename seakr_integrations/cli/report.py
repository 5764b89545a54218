"""``seakr report RESULTS...``: ``seakr eval`` results files in, a Markdown table per dataset out
(``seakr_integrations.evaluation.summary``).
"""

from __future__ import annotations

import argparse
from pathlib import Path


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    rep = sub.add_parser(
        "report", help="summarise seakr eval results files: scores and costs per run, paired F1 differences"
    )
    rep.add_argument("results", nargs="+", help="results files, or directories holding them (searched recursively)")
    rep.add_argument("--out", default=None, help="write the Markdown here (default: print it)")
    rep.add_argument(
        "--against",
        default=None,
        metavar="NAME",
        help="a run's row label or file name: its F1 minus every other run's, question by question, with a paired "
        "bootstrap interval",
    )
    rep.add_argument("--title", default="Evaluation results")
    rep.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from seakr_integrations.evaluation.summary import read_runs, summary_markdown

    runs = read_runs(args.results)
    text = summary_markdown(runs, against=args.against, title=args.title)
    if args.out is None:
        print(text, end="")
        return 0
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text, encoding="utf-8")
    print(f"wrote {out} from {len(runs)} results file(s)")
    return 0
