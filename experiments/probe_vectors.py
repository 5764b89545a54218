"""The hidden state of SeaKR's first greedy step at EOS, at every layer, for a linear probe (issue 66).

For each first step of ``runs/signals/DATASET.jsonl`` (lines 0-299; its greedy text as the engine wrote it), the
prompt SeaKR builds (Qwen2.5-Coder-0.5B-Instruct's chat template, the dataset's ten exemplars) is run once through
the model on transformers (CPU, float32) with the greedy text and EOS after it, and the vector at the EOS position
is kept from every decoder layer's output (``residual``) and every MLP's output (``mlp``, what SeaKR's read-out
takes).  Saved as one ``.npz`` of float16 arrays ``residual`` and ``mlp`` ``(questions, layers, hidden)`` and
``lines``; it is large (about 50 MB for 300 questions) and stays out of the repository.

    python experiments/probe_vectors.py --dataset hotpotqa --out /tmp/probe/hotpotqa.npz
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", required=True, choices=["hotpotqa", "2wiki"])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--limit", type=int, default=None, help="the first N steps only (a quick check)")
    args = parser.parse_args()

    import torch

    from seakr_integrations.backends.architecture import find_mlp
    from seakr_integrations.backends.loading import load_backend
    from seakr_integrations.reasoning.calls import ModelCalls
    from seakr_integrations.reasoning.config import SeaKRConfig
    from seakr_integrations.reasoning.state import QuestionState

    rows = [json.loads(x) for x in (ROOT / "runs" / "signals" / f"{args.dataset}.jsonl").read_text().splitlines()]
    rows = sorted((r for r in rows if "line" in r), key=lambda r: r["line"])[: args.limit]
    backend = load_backend("hf", "qwen", dtype="float32")
    calls = ModelCalls(backend, SeaKRConfig(exemplar_style=args.dataset, rules=()))
    sequences = []
    for r in rows:
        prompt = calls.prompt(QuestionState(r["question"]), [], [])
        ids = backend.tokenize(prompt) + backend.tokenize(r["greedy"]) + [backend.eos_token_id]
        sequences.append(ids)
    layers = backend.layers
    captured: dict[tuple[str, int], torch.Tensor] = {}

    def keep(source: str, i: int):
        def hook(_module, _inputs, output):
            captured[(source, i)] = output[0] if isinstance(output, tuple) else output

        return hook

    handles = [layer.register_forward_hook(keep("residual", i)) for i, layer in enumerate(layers)]
    handles += [find_mlp(layer).register_forward_hook(keep("mlp", i)) for i, layer in enumerate(layers)]
    n, width = len(sequences), backend.hidden_size
    out = {s: np.zeros((n, len(layers), width), dtype=np.float16) for s in ("residual", "mlp")}
    with torch.inference_mode():
        for start in range(0, n, args.batch):
            batch = sequences[start : start + args.batch]
            longest = max(len(s) for s in batch)
            ids = torch.full((len(batch), longest), backend.eos_token_id, dtype=torch.long)
            mask = torch.zeros_like(ids)
            for j, s in enumerate(batch):
                ids[j, : len(s)] = torch.tensor(s)
                mask[j, : len(s)] = 1
            backend.model(input_ids=ids, attention_mask=mask, use_cache=False, logits_to_keep=1)
            last = torch.tensor([len(s) - 1 for s in batch])
            for (source, i), value in captured.items():
                vectors = value[torch.arange(len(batch)), last].float().numpy()
                out[source][start : start + len(batch), i] = vectors.astype(np.float16)
            print(f"{start + len(batch)} of {n}", flush=True)
    for h in handles:
        h.remove()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(args.out, lines=np.array([r["line"] for r in rows]), **out)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
