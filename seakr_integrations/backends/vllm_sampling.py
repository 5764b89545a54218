"""Top-k then top-p sampling for vLLM without sorting the whole vocabulary: a V1 logits processor in the workers that
applies ``sampling.top_k_top_p_filter``.  Requests opt in with ``extra_args={"seakr_top_k": k, "seakr_top_p": p}``;
why: docs/design/backends.md."""

from __future__ import annotations

from typing import Any

import torch
from vllm.v1.sample.logits_processor import BatchUpdate, LogitsProcessor, process_dict_updates

from seakr_integrations.backends.sampling import top_k_top_p_filter

__all__ = ["EXTRA_TOP_K", "EXTRA_TOP_P", "TopKTopPLogitsProcessor"]

EXTRA_TOP_K = "seakr_top_k"
EXTRA_TOP_P = "seakr_top_p"


def _row_params(params: Any, _prompt: Any, _output: Any) -> tuple[int, float] | None:
    extra = params.extra_args or {}
    if EXTRA_TOP_K not in extra and EXTRA_TOP_P not in extra:
        return None
    return int(extra.get(EXTRA_TOP_K, 0)), float(extra.get(EXTRA_TOP_P, 1.0))


class TopKTopPLogitsProcessor(LogitsProcessor):
    """Argmax-invariant processor (vLLM runs it after temperature, before its own top-k/top-p, only when
    sampling); raw logprobs are computed before any of this, so reported logprobs are unchanged."""

    def __init__(self, vllm_config: Any, device: torch.device, is_pin_memory: bool) -> None:
        self.rows: dict[int, tuple[int, float]] = {}

    @classmethod
    def validate_params(cls, sampling_params: Any) -> None:
        params = _row_params(sampling_params, None, None)
        if params is not None:
            top_k, top_p = params
            if top_k < 0 or not 0.0 < top_p <= 1.0:
                raise ValueError(f"{EXTRA_TOP_K}={top_k} must be >= 0 and {EXTRA_TOP_P}={top_p} in (0, 1]")

    def is_argmax_invariant(self) -> bool:
        return True

    def update_state(self, batch_update: BatchUpdate | None) -> None:
        process_dict_updates(self.rows, batch_update, _row_params)

    def apply(self, logits: torch.Tensor) -> torch.Tensor:
        if not self.rows:
            return logits
        index = torch.tensor(list(self.rows), dtype=torch.long, device=logits.device)
        vocab = logits.shape[-1]
        ks = torch.tensor([k if 0 < k < vocab else vocab for k, _ in self.rows.values()], device=logits.device)
        ps = torch.tensor([p for _, p in self.rows.values()], dtype=torch.float32, device=logits.device)
        logits[index] = top_k_top_p_filter(logits[index], ks, ps)
        return logits
