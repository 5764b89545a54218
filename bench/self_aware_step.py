"""Benchmark one SeaKR self-aware step: greedy + k samples + k EOS vectors on a ~400-token prompt.

Each repetition uses a different HotpotQA question (with its own passages as context), as the reasoning loop
does, so vLLM's prefix cache only helps where it would in real use.  Prints one JSON line per back-end with the
median step time, the median EOS read-out time and its share of the step.

    python bench/self_aware_step.py --backend hf vllm --repeats 5

Results go to docs/benchmarks.md together with this command and the machine.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

DATA = Path(__file__).resolve().parents[1] / "data" / "hotpotqa_dev.jsonl"


def build_prompts(tokenize, n: int, target_tokens: int, data: Path) -> list[str]:
    """``n`` SeaKR-format prompts of ``target_tokens`` tokens (within a few), one HotpotQA question each."""
    prompts = []
    with open(data) as fh:
        for line in fh:
            q = json.loads(line)
            tail = f"Answer in the same format as before.\nQuestion: {q['question']}\nAnswer:"
            words = " ".join(f"[{i}] {p['title']}: {p['text']}" for i, p in enumerate(q["context"], 1)).split()
            lo, hi = 0, len(words)  # most passage words that keep the prompt within target_tokens
            while lo < hi:
                mid = (lo + hi + 1) // 2
                if len(tokenize("Context: " + " ".join(words[:mid]) + "\n" + tail)) <= target_tokens:
                    lo = mid
                else:
                    hi = mid - 1
            prompt = "Context: " + " ".join(words[:lo]) + "\n" + tail
            if len(tokenize(prompt)) >= target_tokens - 20:
                prompts.append(prompt)
            if len(prompts) == n:
                return prompts
    raise SystemExit(f"{data} has fewer than {n} questions with {target_tokens} tokens of context")


def run(backend_name: str, args: argparse.Namespace) -> dict:
    from seakr_integrations.params import SamplingConfig

    started = time.perf_counter()
    if backend_name == "hf":
        from seakr_integrations.backends.hf import HFBackend

        backend = HFBackend(args.model, dtype=args.hf_dtype)
    else:
        from seakr_integrations.backends.vllm import VLLMBackend

        backend = VLLMBackend(args.model, dtype=args.vllm_dtype, block_size=args.block_size)
    load_s = time.perf_counter() - started
    config = SamplingConfig(k=args.k, max_tokens=args.max_tokens, stop=("\n\n", "\nQuestion:", "\nContext"))
    prompts = build_prompts(backend.tokenize, args.warmup + args.repeats, args.prompt_tokens, Path(args.data))
    baseline = None
    if backend_name == "vllm":
        # A second engine, with its own prefix cache, runs the same greedy + n=k requests (same prompts and seeds,
        # hence the same samples) without any read-out: the paired difference is the read-out's marginal cost.
        from seakr_integrations.backends.vllm import VLLMBackend

        baseline = VLLMBackend(args.model, dtype=args.vllm_dtype, block_size=args.block_size)
    steps, readouts, tokens, bare = [], [], [], []
    for i, prompt in enumerate(prompts):
        out = backend.generate([prompt], config)[0]
        if baseline is not None:
            from vllm.inputs import TokensPrompt

            greedy, sampled, _ = baseline.request_params(config)
            ids = baseline.tokenize(prompt)
            started = time.perf_counter()
            baseline.llm.generate([TokensPrompt(prompt_token_ids=ids)] * 2, [greedy, sampled], use_tqdm=False)
            bare_s = time.perf_counter() - started
        if i < args.warmup:
            continue
        steps.append(backend.last_timings["total_s"])
        readouts.append(backend.last_timings["readout_s"])
        tokens.append(len(out.greedy.token_ids) + sum(len(s.token_ids) for s in out.samples))
        if baseline is not None:
            bare.append(bare_s)
    backend.close()
    if baseline is not None:
        baseline.close()
    step = statistics.median(steps)
    readout = statistics.median(readouts)
    return {
        "backend": backend_name,
        "model": args.model,
        "dtype": args.hf_dtype if backend_name == "hf" else args.vllm_dtype,
        "block_size": args.block_size if backend_name == "vllm" else None,
        "prompt_tokens": [len(backend.tokenize(p)) for p in prompts[args.warmup :]],
        "k": args.k,
        "max_tokens": args.max_tokens,
        "load_s": round(load_s, 1),
        "step_s_median": round(step, 3),
        "step_s_all": [round(s, 3) for s in steps],
        "readout_s_median": round(readout, 3),
        "readout_share_median": round(statistics.median(r / s for r, s in zip(readouts, steps, strict=True)), 3),
        "generated_tokens_median": statistics.median(tokens),
        **(
            {
                "no_readout_step_s_median": round(statistics.median(bare), 3),
                "no_readout_step_s_all": [round(b, 3) for b in bare],
                "readout_marginal_share_median": round(
                    statistics.median(1 - b / s for b, s in zip(bare, steps, strict=True)), 3
                ),
            }
            if bare
            else {}
        ),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", nargs="+", choices=["hf", "vllm"], default=["hf", "vllm"])
    parser.add_argument("--model", default="smollm2-135m-instruct")
    parser.add_argument("--hf-dtype", default="float32", help="HF weights dtype (fp32 is fastest on most CPUs)")
    parser.add_argument("--vllm-dtype", default="bfloat16", help="vLLM engine dtype")
    parser.add_argument("--k", type=int, default=20)
    parser.add_argument("--max-tokens", type=int, default=32)
    parser.add_argument("--prompt-tokens", type=int, default=400)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--data", default=str(DATA))
    parser.add_argument("--block-size", type=int, default=None, help="vLLM KV block size (default: the back-end's)")
    args = parser.parse_args()
    machine = f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}"
    results = [run(b, args) for b in args.backend]
    for r in results:
        r["machine"] = machine
        print(json.dumps(r), flush=True)
    if len(results) == 2:
        hf, vl = results
        print(json.dumps({"hf_over_vllm_step_ratio": round(hf["step_s_median"] / vl["step_s_median"], 2)}))


if __name__ == "__main__":
    sys.exit(main())
