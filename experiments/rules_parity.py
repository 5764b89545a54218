"""Do the rule objects decide as the flags they replaced?  Re-run questions of a committed run of the old default
(``runs/timing-max-docs-2`` at commit f0839c6, read from git history: the flags, two passages, k = 10, 64 tokens,
fold 1's delta and band) with today's code and the same settings written as rules, and compare answers, LM calls and
searches question by question.

    python experiments/rules_parity.py [--questions 16]
"""

from __future__ import annotations

import argparse
import json
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RUN = "f0839c6:runs/timing-max-docs-2"


def committed(path: str) -> str:
    """A file of the old run, as committed."""
    return subprocess.run(["git", "show", path], cwd=ROOT, check=True, capture_output=True, text=True).stdout


def rules_of(flags: dict) -> tuple:
    """The rules that decide as the old default's flags did (checked here: every flag at its default-run value)."""
    from seakr_integrations.reasoning.rules import DEFAULT_RULES, TokenCascade

    expected = {"check_claims": True, "cover_compared_entities": True, "anchor_queries": True, "rerank": False,
                "stop_on_repeated_step": True, "knowledge_needs_passages": True, "final_samples": "deciding",
                "final_margin": 0.5, "answer_with_option": True, "max_docs": 2, "cascade_estimator": "min_token_prob",
                "cover_bridge_entities": False, "answer_when_stated": False, "final_estimator": None,
                "rerank_margin": 0.0}  # fmt: skip
    differ = {k: flags[k] for k, v in expected.items() if flags[k] != v}
    if differ:
        raise SystemExit(f"the run's flags are not the old default's: {differ}")
    band = tuple(flags["cascade_band"])
    return tuple(TokenCascade(band=band) if r.name == "token-cascade" else r for r in DEFAULT_RULES)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--questions", type=int, default=16, help="per dataset, the first of fold 1 (default 16)")
    args = parser.parse_args()

    from seakr_integrations.backends.loading import load_backend
    from seakr_integrations.cli.backend import quiet_vllm_start
    from seakr_integrations.demo import cached_index
    from seakr_integrations.evaluation import read_questions
    from seakr_integrations.reasoning import SeaKR, SeaKRConfig

    quiet_vllm_start()
    report = []
    with load_backend("vllm", "qwen", dtype="float32") as backend:
        for ds in ("hotpotqa", "2wiki"):
            lines = committed(f"{RUN}/{ds}_dev/fold1/seakr.jsonl").splitlines()
            flags = json.loads(lines[0])["config"]["seakr"]
            made = {r["id"]: r for r in map(json.loads, lines[1:])}
            config = SeaKRConfig(
                k=flags["k"], max_tokens=flags["max_tokens"], exemplar_style=ds, delta=flags["delta"],
                rules=rules_of(flags),
            )  # fmt: skip
            questions = [
                q for i, q in enumerate(read_questions(ROOT / "data" / f"{ds}_dev.jsonl").questions) if i % 5 == 1
            ]
            questions = [q for q in questions if q.id in made][: args.questions]
            seakr = SeaKR(backend, cached_index(ROOT / "data" / f"corpus_{ds}.jsonl", progress=False), config)
            for i, result in seakr.iter_answers([q.question for q in questions], max_in_flight=8):
                old = made[questions[i].id]
                now = (result.answer, result.lm_calls, result.searches)
                then = (old["prediction"], old["lm_calls"], old["retrievals"])
                report.append({"dataset": ds, "id": questions[i].id, "same": now == then, "now": now, "then": then})
                print(json.dumps(report[-1]), flush=True)
    same = sum(r["same"] for r in report)
    print(f"{same} of {len(report)} questions gave the same answer, LM calls and searches as the flags' run")


if __name__ == "__main__":
    main()
