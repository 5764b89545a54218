"""Decode step time of a decoder on one GPU, eager and with CUDA graphs, with and without a SeaKR-style read-out
hook: the measured part of docs/gpu_plan.md's assumptions A3-A5, on a machine that has PyTorch and transformers but
no vLLM.

A step's time does not depend on the weights' values, so each model is built from its published shape with random
weights (no download): Qwen2.5-0.5B (24 layers, hidden 896) and Llama-3.1-8B (32 layers, hidden 4096), bfloat16.
For each batch size B, ``generate`` decodes greedily from B random prompts of ``--prompt`` tokens into a static KV
cache; a step's time is the difference between decoding ``--long`` and ``--short`` new tokens, over the difference
(so the prefill cancels), median of ``--repeats``.  Three modes:

* ``eager``: every module launched from Python, as vLLM runs when SeaKR reads hidden states (``enforce_eager``);
* ``eager+hook``: the same with a forward hook on the middle layer's MLP that copies each sequence's last position
  to the host every step (one device sync per forward pass, as seakr's vLLM hook makes);
* ``graphs``: transformers' own compiled decode (``torch.compile``, CUDA graphs), what a server without the hook
  runs.

This is transformers' forward, not vLLM's (whose scheduler, sampler and kernels differ): read the eager/graphs ratio
and the hook's added milliseconds, not the absolute step time, as vLLM's.  One JSON line per measurement on stdout
(and appended to ``--out``); a measurement past ``--deadline`` seconds is skipped, with a line saying so.

    python bench/gpu_step.py --out gpu_step.jsonl                  # on a GPU machine
    python bench/gpu_step.py --tiny --device cpu --modes eager eager+hook --batch-sizes 1 2   # the logic, on CPU
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import time
from typing import Any

SHAPES: dict[str, dict[str, Any]] = {
    "qwen2.5-0.5b": {
        "model_type": "qwen2",
        "hidden_size": 896,
        "intermediate_size": 4864,
        "num_hidden_layers": 24,
        "num_attention_heads": 14,
        "num_key_value_heads": 2,
        "vocab_size": 151936,
        "tie_word_embeddings": True,
    },
    "llama-3.1-8b": {
        "model_type": "llama",
        "hidden_size": 4096,
        "intermediate_size": 14336,
        "num_hidden_layers": 32,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "vocab_size": 128256,
        "tie_word_embeddings": False,
    },
    "tiny": {
        "model_type": "qwen2",
        "hidden_size": 64,
        "intermediate_size": 128,
        "num_hidden_layers": 4,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "vocab_size": 512,
        "tie_word_embeddings": True,
    },
}
MODES = ("eager", "eager+hook", "graphs")


def build(shape: str, device: str, dtype: Any) -> Any:
    """A causal LM of ``shape`` with random weights, on ``device``; no EOS, so every generation runs to its length."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    spec = dict(SHAPES[shape])
    config = AutoConfig.for_model(spec.pop("model_type"), **spec, max_position_embeddings=8192)
    config.eos_token_id = None
    with torch.device(device):
        model = AutoModelForCausalLM.from_config(config, dtype=dtype)
    model.generation_config.eos_token_id = None
    model.generation_config.pad_token_id = 0
    return model.eval()


def read_out_hook(model: Any) -> Any:
    """SeaKR's read-out on the middle layer (L/2 - 1, its MLP): every sequence's last position copied to the host."""
    layers = model.model.layers

    def hook(_module: Any, _inputs: Any, output: Any) -> None:
        output[:, -1, :].float().cpu()  # .cpu() waits for the GPU: the sync the hook costs

    return layers[max(len(layers) // 2 - 1, 0)].mlp.register_forward_hook(hook)


def decode_seconds(model: Any, prompts: Any, new_tokens: int, graphs: bool, sync: Any) -> float:
    """Wall seconds of one greedy ``generate`` of exactly ``new_tokens`` tokens into a static cache."""
    import torch

    sync()
    started = time.perf_counter()
    with torch.inference_mode():
        model.generate(
            prompts,
            attention_mask=torch.ones_like(prompts),
            max_new_tokens=new_tokens,
            min_new_tokens=new_tokens,
            do_sample=False,
            cache_implementation="static",
            disable_compile=not graphs,
        )
    sync()
    return time.perf_counter() - started


def step_ms(model: Any, batch: int, args: argparse.Namespace, mode: str, sync: Any) -> dict[str, Any]:
    """The median decode step of ``mode`` at batch ``batch``, in milliseconds, and its tokens per second."""
    import torch

    generator = torch.Generator(device="cpu").manual_seed(batch)
    prompts = torch.randint(1, model.config.vocab_size, (batch, args.prompt), generator=generator).to(model.device)
    handle = read_out_hook(model) if mode == "eager+hook" else None
    graphs = mode == "graphs"
    try:
        warm = time.perf_counter()
        decode_seconds(model, prompts, args.short, graphs, sync)  # compiles (graphs) and warms the allocator
        decode_seconds(model, prompts, args.long, graphs, sync)
        warm_s = time.perf_counter() - warm
        steps = []
        for _ in range(args.repeats):
            short = decode_seconds(model, prompts, args.short, graphs, sync)
            long = decode_seconds(model, prompts, args.long, graphs, sync)
            steps.append((long - short) / (args.long - args.short))
    finally:
        if handle is not None:
            handle.remove()
    step = statistics.median(steps)
    return {
        "step_ms": round(step * 1000, 3),
        "steps_ms": [round(s * 1000, 3) for s in steps],
        "tokens_per_s": round(batch / step, 1),
        "warm_up_s": round(warm_s, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shapes", nargs="+", default=["qwen2.5-0.5b", "llama-3.1-8b"], choices=sorted(SHAPES))
    parser.add_argument("--tiny", action="store_true", help="the tiny shape only (a check of the script)")
    parser.add_argument("--modes", nargs="+", default=list(MODES), choices=MODES)
    parser.add_argument("--batch-sizes", nargs="+", type=int, default=[1, 11, 64, 128])
    parser.add_argument("--graph-batch-sizes", nargs="+", type=int, default=[1, 11, 64], help="(compiling is slow)")
    parser.add_argument("--prompt", type=int, default=1024, help="prompt tokens per sequence (SeaKR's: 1-3k)")
    parser.add_argument("--short", type=int, default=8)
    parser.add_argument("--long", type=int, default=40)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--deadline", type=float, default=480.0, help="seconds after which measurements are skipped")
    parser.add_argument("--out", help="also append each JSON line to this file")
    args = parser.parse_args()
    if args.long <= args.short:
        parser.error(f"--long ({args.long}) must exceed --short ({args.short})")

    import torch
    import transformers

    started = time.perf_counter()
    sync = torch.cuda.synchronize if args.device.startswith("cuda") else (lambda: None)
    dtype = torch.bfloat16 if args.device.startswith("cuda") else torch.float32
    machine = {
        "device": torch.cuda.get_device_name() if args.device.startswith("cuda") else platform.processor(),
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "dtype": str(dtype).removeprefix("torch."),
        "prompt_tokens": args.prompt,
    }

    def emit(record: dict[str, Any]) -> None:
        line = json.dumps({**record, **machine})
        print(line, flush=True)
        if args.out:
            with open(args.out, "a") as fh:
                fh.write(line + "\n")

    shapes = ["tiny"] if args.tiny else args.shapes
    # today's modes for every model first, then the compiled one (slow to compile, so the first to skip)
    passes = [[m for m in args.modes if m != "graphs"], [m for m in args.modes if m == "graphs"]]
    for modes in (p for p in passes if p):
        for shape in shapes:
            model = build(shape, args.device, dtype)
            for mode in modes:
                for batch in args.graph_batch_sizes if mode == "graphs" else args.batch_sizes:
                    record = {"shape": shape, "mode": mode, "batch": batch}
                    if time.perf_counter() - started > args.deadline:
                        emit({**record, "skipped": f"past --deadline {args.deadline:g} s"})
                        continue
                    try:
                        emit({**record, **step_ms(model, batch, args, mode, sync)})
                    except Exception as error:  # one failed measurement (out of memory, compiling) skips itself
                        emit({**record, "error": f"{type(error).__name__}: {str(error)[:300]}"})
                        if args.device.startswith("cuda"):
                            torch.cuda.empty_cache()
            del model
            if args.device.startswith("cuda"):
                torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
