"""The part of the vLLM back-end that runs inside vLLM's worker processes (``worker_extension_cls``, driven by name
through ``collective_rpc("seakr_...")``): vLLM has no option to return hidden states (docs/design/backends.md).
Workers import this module: it must stay light (torch and our layer lookup only)."""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from seakr_integrations.backends.architecture import find_decoder_layers, find_mlp
from seakr_integrations.backends.vllm_cpu_memory import RELEASED_BYTES, register_loader, release_duplicate_vocab_weights

__all__ = ["SeaKRWorkerExtension", "raise_v2_runner", "token_digest", "unpack_popped"]

register_loader()  # vLLM imports this module into each worker before the model loads: its load format is known there

CAST_LOGGER = "vllm.model_executor.models.utils"
"""vLLM's logger that warns once per weight when the checkpoint's dtype is not the engine's (122 lines for SmolLM2)."""


class _FirstCastOnly(logging.Filter):
    """Lets the first "Attempted to load weight ... with dtype" warning through, saying the rest are alike."""

    seen = False

    def filter(self, record: logging.LogRecord) -> bool:
        if not str(record.msg).startswith("Attempted to load weight"):
            return True
        if self.seen:
            return False
        self.seen = True
        record.msg = f"{record.msg} (and every other weight alike: the checkpoint's dtype is not --dtype)"
        return True


if not any(isinstance(f, _FirstCastOnly) for f in logging.getLogger(CAST_LOGGER).filters):
    logging.getLogger(CAST_LOGGER).addFilter(_FirstCastOnly())

V2_RUNNER_HINT = (
    "this vLLM worker uses the V2 model runner, which has no `input_batch` to map hidden-state rows to requests: "
    "set the environment variable VLLM_USE_V2_MODEL_RUNNER=0 before creating the engine"
)


def raise_v2_runner(error: BaseException) -> None:
    """Raise ``ValueError(V2_RUNNER_HINT)`` when ``error`` is a worker's refusal of vLLM's V2 model runner."""
    if "V2 model runner" in str(error):
        raise ValueError(V2_RUNNER_HINT) from error


def token_digest(token_ids: Sequence[int]) -> str:
    """Key of a token sequence, computed identically by the driver and the workers."""
    return hashlib.blake2b(np.asarray(token_ids, dtype=np.int64).tobytes(), digest_size=16).hexdigest()


def unpack_popped(popped: dict[str, Any]) -> tuple[dict[str, np.ndarray], dict[str, dict[int, float]]]:
    """The driver's half of ``seakr_pop_vectors``' codec: vectors by key, each request's logsumexps by position."""
    stacked = np.frombuffer(popped["data"], dtype=np.float32).reshape(popped["shape"])
    vectors = {k: stacked[i].copy() for i, k in enumerate(popped["keys"])}
    return vectors, {rid: {int(at): float(v) for at, v in pairs} for rid, pairs in (popped.get("lse") or {}).items()}


class SeaKRWorkerExtension:
    """Worker methods reachable by ``collective_rpc("seakr_<name>")``; ``self`` is the vLLM worker."""

    def seakr_install_hook(self, layer: int, source: str) -> dict[str, Any]:
        """(Re)install the capture hook on decoder ``layer``; returns facts about the model for the driver.  On CPU it
        frees the vocabulary-sized weights vLLM keeps twice, if seakr's loader has not (``vllm_cpu_memory``)."""
        runner = self.model_runner  # type: ignore[attr-defined]
        for attribute in ("input_batch", "query_start_loc", "positions", "requests"):
            if not hasattr(runner, attribute):
                raise RuntimeError(V2_RUNNER_HINT + f" (missing model_runner.{attribute})")
        self.seakr_remove_hook()
        model = runner.get_model() if hasattr(runner, "get_model") else runner.model
        release_duplicate_vocab_weights(model, getattr(self, "vllm_config", None))
        layers = find_decoder_layers(model)
        if not 0 <= layer < len(layers):
            raise ValueError(f"layer {layer} out of range 0..{len(layers) - 1}")
        target = layers[layer]
        if source == "mlp":
            target = find_mlp(target)
            if target is None:
                raise ValueError(f"layer {layer} of {type(model).__name__} has no MLP sub-module")
        self._seakr_capturing = False
        self._seakr_captured: dict[str, np.ndarray] = {}
        self._seakr_fired = 0
        self._seakr_lse_prefix = ""
        self._seakr_readout_prefix = ""
        self._seakr_lse: dict[str, dict[int, float]] = {}
        self._seakr_handle = target.register_forward_hook(self._seakr_hook)
        logits_module = getattr(model, "logits_processor", None)
        if isinstance(logits_module, torch.nn.Module):
            self._seakr_logits_handle = logits_module.register_forward_hook(self._seakr_logits_hook)
        return {
            "num_layers": len(layers),
            "module": type(target).__name__,
            "logits": self._seakr_logits_handle is not None,
            "released_bytes": getattr(model, RELEASED_BYTES, 0),
        }

    def seakr_remove_hook(self) -> None:
        for name in ("_seakr_handle", "_seakr_logits_handle"):
            handle = getattr(self, name, None)
            if handle is not None:
                handle.remove()
            setattr(self, name, None)

    def seakr_set_capture(self, on: bool, lse_prefix: str = "", readout_prefix: str = "") -> None:
        """Start (clearing earlier vectors) or stop capturing.  ``lse_prefix``: record the raw logits' logsumexp at
        every generated position of the requests whose ids start with it (none when empty).  ``readout_prefix``: keep
        only those requests' vectors, each under the driver's request id (a server's concurrent handlers then take
        exactly their own); when empty, every request's vector under the digest of its prompt."""
        self._seakr_capturing = bool(on)
        if on:
            self._seakr_captured = {}
            self._seakr_fired = 0
            self._seakr_lse = {}
            self._seakr_lse_prefix = str(lse_prefix)
            self._seakr_readout_prefix = str(readout_prefix)

    def seakr_pop_vectors(
        self, keys: Sequence[str] | None = None, lse_ids: Sequence[str] | None = None
    ) -> dict[str, Any]:
        """The captured vectors and how often the hook ran: all of them, or only ``keys`` (and the logsumexps of
        ``lse_ids``), which are then forgotten while the others stay.  Vectors travel as one float32 buffer (``data``,
        rows in ``keys`` order, ``shape``): collective_rpc results are decoded without a type, so tensors and numpy
        arrays would arrive as undecoded tuples."""
        if keys is None:
            captured, self._seakr_captured = self._seakr_captured, {}
        else:
            captured = {k: self._seakr_captured.pop(k) for k in keys if k in self._seakr_captured}
        names = list(captured)
        stacked = np.stack([captured[k] for k in names]).astype(np.float32) if names else np.zeros((0, 0), np.float32)
        if lse_ids is None:
            lse, self._seakr_lse = self._seakr_lse, {}
        else:
            lse = {rid: self._seakr_lse.pop(rid) for rid in lse_ids if rid in self._seakr_lse}
        return {
            "keys": names,
            "data": stacked.tobytes(),
            "shape": list(stacked.shape),
            "fired": self._seakr_fired,
            "lse": {rid: [list(item) for item in by_position.items()] for rid, by_position in lse.items()},
        }

    def _seakr_batch(self) -> tuple[list[str], np.ndarray, np.ndarray]:
        """The step's scheduled request ids, the row of each one's last scheduled token, and that token's position."""
        runner = self.model_runner  # type: ignore[attr-defined]
        batch = runner.input_batch
        num_reqs = batch.num_reqs
        last_rows = np.asarray(runner.query_start_loc.np[1 : num_reqs + 1], dtype=np.int64) - 1
        positions = runner.positions[torch.as_tensor(last_rows, device=runner.positions.device)].cpu().numpy()
        return list(batch.req_ids[:num_reqs]), last_rows, positions

    def _seakr_prompt(self, req_id: str) -> list[int] | None:
        return getattr(self.model_runner.requests.get(req_id), "prompt_token_ids", None)  # type: ignore[attr-defined]

    def _seakr_logits_hook(self, _module: torch.nn.Module, _inputs: Any, logits: Any) -> None:
        """Record ``logsumexp`` of the raw logits of the named requests' rows (one row per request, batch order)."""
        prefix = self._seakr_lse_prefix
        if not (self._seakr_capturing and prefix and isinstance(logits, torch.Tensor)):
            return
        req_ids, _, positions = self._seakr_batch()
        if logits.shape[0] != len(req_ids):  # speculative decoding: several rows per request; left unrecorded
            return
        wanted: list[tuple[int, str, int]] = []  # (row, driver's id, generated position)
        for i, req_id in enumerate(req_ids):
            name = req_id.split("-", 1)[0]
            prompt = self._seakr_prompt(req_id)
            if name.startswith(prefix) and prompt is not None:
                generated = int(positions[i]) - (len(prompt) - 1)
                if generated >= 0:  # a chunk that ends before the prompt's end predicts nothing
                    wanted.append((i, name, generated))
        if not wanted:
            return
        rows = torch.as_tensor([r for r, _, _ in wanted], device=logits.device)
        values = torch.logsumexp(logits.index_select(0, rows).float(), dim=-1).cpu().tolist()
        for (_, name, generated), value in zip(wanted, values, strict=True):
            self._seakr_lse.setdefault(name, {})[generated] = float(value)

    def _seakr_hook(self, _module: torch.nn.Module, _inputs: Any, output: Any) -> None:
        if not self._seakr_capturing:
            return
        self._seakr_fired += 1
        if isinstance(output, tuple):
            # vLLM's fused-residual layers return (hidden, residual): hidden is the MLP output and
            # hidden + residual the residual stream after the layer.
            value = output[0] + output[1] if output[1] is not None else output[0]
        else:
            value = output
        req_ids, last_rows, positions = self._seakr_batch()
        only = self._seakr_readout_prefix
        wanted: list[tuple[int, str]] = []  # (row, key) of requests whose chunk ends at the prompt's end
        for i, req_id in enumerate(req_ids):
            if only and not req_id.startswith(only):
                continue
            prompt = self._seakr_prompt(req_id)
            if prompt is not None and int(positions[i]) == len(prompt) - 1:
                wanted.append((int(last_rows[i]), req_id.split("-", 1)[0] if only else token_digest(prompt)))
        if not wanted:  # a decode-only step: nothing to copy
            return
        rows = torch.as_tensor([r for r, _ in wanted], device=value.device)
        picked = value.index_select(0, rows).float().cpu().numpy()
        self._seakr_captured.update(zip([key for _, key in wanted], picked, strict=True))
