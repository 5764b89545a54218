"""What SeaKR's first-step gate could read: every estimator and the cheap greedy-token signals, per question.

For each question this runs SeaKR's first multi-hop step (the dataset's exemplars, no passage, one sentence) the way
the loop does, and records for it:

* every estimator the library has, from one self-aware call (EigenScore, perplexity, LN-entropy, multi-perplexity,
  energy) plus the prompt probe (one more call);
* the cheap signals that need no samples: the greedy continuation's mean token log-probability, its least likely
  token, its mean and largest token entropy, and its length in tokens;
* what each part cost: seconds of the greedy-only call, of the full call (greedy + k samples + read-outs), of the
  probe, for the whole batch, and the tokens each generated.

The token entropy is the one number the loop's calls do not return (they carry the chosen token's log-probability
only): this script asks vLLM for the greedy continuation once more with the 20 most likely tokens at each position,
and takes the entropy of that top-20 distribution with the rest of the mass as one more outcome (a lower bound of
the full entropy, exact where the top 20 hold nearly all of it).

    python experiments/gate_signals.py --dataset hotpotqa --start 0 --limit 300 --out runs/signals/hotpotqa.jsonl

Rows are appended per batch and a rerun skips the lines already in the file.  ``experiments/gate_table.py`` turns
the rows and the baselines' results into the table of ``docs/gate_signals.md``.
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def token_entropy(top: dict[int, Any]) -> float:
    """Entropy (nats) of one position's top-N log-probabilities, the remaining mass counted as one outcome."""
    probs = [math.exp(lp.logprob) for lp in top.values()]
    rest = max(0.0, 1.0 - sum(probs))
    return -sum(p * math.log(p) for p in [*probs, rest] if p > 0)


def cheap_signals(logprobs: list[float], entropies: list[float]) -> dict[str, float]:
    """The greedy continuation's signals, each oriented "higher = more uncertain"."""
    if not logprobs:
        return {
            "neg_mean_logprob": math.inf,
            "one_minus_min_prob": 1.0,
            "mean_entropy": math.inf,
            "max_entropy": math.inf,
            "length": 0,
        }
    return {
        "neg_mean_logprob": -sum(logprobs) / len(logprobs),
        "one_minus_min_prob": 1.0 - math.exp(min(logprobs)),
        "mean_entropy": sum(entropies) / len(entropies) if entropies else math.nan,
        "max_entropy": max(entropies) if entropies else math.nan,
        "length": len(logprobs),
    }


def done_lines(path: Path) -> set[int]:
    if not path.exists():
        return set()
    return {json.loads(line)["line"] for line in path.read_text().splitlines() if line.strip() and '"line"' in line}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", required=True, choices=["hotpotqa", "2wiki"])
    parser.add_argument("--start", type=int, default=0)
    parser.add_argument("--limit", type=int, default=300)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("-k", type=int, default=10)
    parser.add_argument("--max-tokens", type=int, default=64)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()

    from vllm import SamplingParams
    from vllm.inputs import TokensPrompt

    from seakr_integrations.backends.loading import load_backend
    from seakr_integrations.cli.backend import quiet_vllm_start
    from seakr_integrations.evaluation import read_questions
    from seakr_integrations.reasoning import SeaKR, SeaKRConfig
    from seakr_integrations.reasoning.state import QuestionState
    from seakr_integrations.uncertainty.estimate import estimate
    from seakr_integrations.uncertainty.registry import GENERATE_PROVIDES, estimators_for

    questions = read_questions(ROOT / "data" / f"{args.dataset}_dev.jsonl").questions
    todo = [(i, questions[i]) for i in range(args.start, min(args.start + args.limit, len(questions)))]
    done = done_lines(args.out)
    todo = [(i, q) for i, q in todo if i not in done]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    quiet_vllm_start()
    config = SeaKRConfig(k=args.k, max_tokens=args.max_tokens, exemplar_style=args.dataset, delta=0.0)
    backend = load_backend("vllm", "qwen", dtype="float32")
    seakr = SeaKR(backend, None, config)
    with args.out.open("a") as out:
        for b in range(0, len(todo), args.batch):
            batch = todo[b : b + args.batch]
            calls = [seakr.calls.call(QuestionState(q.question), [], [], sentence=True) for _, q in batch]
            prompts = [p for p, _ in calls]
            sampling = calls[0][1]
            started = time.perf_counter()
            greedy_only = backend.generate(prompts, [s.with_(k=0) for _, s in calls])
            greedy_s = time.perf_counter() - started
            started = time.perf_counter()
            full = backend.generate(prompts, [s for _, s in calls])
            full_s = time.perf_counter() - started
            readout_s = backend.last_timings.get("readout_s", 0.0)
            started = time.perf_counter()
            probes = seakr.probe_uncertainties(prompts, full)
            probe_s = time.perf_counter() - started
            params = SamplingParams(
                temperature=0.0, max_tokens=sampling.max_tokens, stop=list(sampling.stop), logprobs=20
            )
            top = backend.llm.generate(
                [TokensPrompt(prompt_token_ids=o.prompt_token_ids) for o in greedy_only], params, use_tqdm=False
            )
            provides = GENERATE_PROVIDES if full[0].greedy.logit_lse is not None else GENERATE_PROVIDES - {"logits"}
            for (line, q), g, f, probe, t in zip(batch, greedy_only, full, probes, top, strict=True):
                entropies = [token_entropy(pos) for pos in (t.outputs[0].logprobs or [])]
                entropies = entropies[: len(g.greedy.logprobs)]
                scores = {name: estimate(f, name, config.alpha).value for name in estimators_for(provides)}
                scores["prompt"] = probe.value
                row = {
                    "line": line,
                    "id": q.id,
                    "type": q.type,
                    "question": q.question,
                    "greedy": g.greedy.text,
                    "same_greedy": g.greedy.text == f.greedy.text,
                    "greedy_tokens": len(g.greedy.token_ids),
                    "sample_tokens": [len(s.token_ids) for s in f.samples],
                    "logprobs": [round(x, 5) for x in g.greedy.logprobs],
                    "entropies": [round(x, 5) for x in entropies],
                    "cheap": cheap_signals(g.greedy.logprobs, entropies),
                    "scores": {k: (v if math.isfinite(v) else None) for k, v in scores.items()},
                }
                out.write(json.dumps(row) + "\n")
            out.write(
                json.dumps(
                    {
                        "batch": [line for line, _ in batch],
                        "greedy_s": greedy_s,
                        "full_s": full_s,
                        "readout_s": readout_s,
                        "probe_s": probe_s,
                        "greedy_tokens": sum(len(g.greedy.token_ids) for g in greedy_only),
                        "full_tokens": sum(o.generated_tokens() for o in full),
                    }
                )
                + "\n"
            )
            out.flush()
            print(
                f"{args.dataset}: lines {batch[0][0]}-{batch[-1][0]} greedy {greedy_s:.1f}s full {full_s:.1f}s "
                f"probe {probe_s:.1f}s",
                flush=True,
            )
    backend.close()


if __name__ == "__main__":
    main()
