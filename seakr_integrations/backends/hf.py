"""Self-aware generation with Hugging Face transformers (CPU or CUDA): the prompt is encoded once and ``1 + k`` rows
decode in lockstep on its KV cache, each finished sample's EOS vector read by a hook (docs/design/backends.md)."""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from seakr_integrations.backends.architecture import find_decoder_layers, find_mlp
from seakr_integrations.backends.base import SelfAwareBackend
from seakr_integrations.backends.sampling import top_k_top_p_filter
from seakr_integrations.models import DEFAULT_MODEL, resolve_model
from seakr_integrations.outputs import Continuation, SelfAwareOutput
from seakr_integrations.params import HiddenSource, SamplingConfig

__all__ = ["HFBackend"]

log = logging.getLogger(__name__)


class _StopForward(Exception):
    """Raised by the capture hook to end a forward pass once the hooked layer has run."""


class _LayerCapture:
    """Forward hook on one decoder layer (``residual``) or its MLP (``mlp``) that keeps the last output."""

    def __init__(self, layer: nn.Module, source: HiddenSource) -> None:
        self.module = find_mlp(layer) if source == "mlp" else layer
        if self.module is None:
            raise ValueError(f"decoder layer {type(layer).__name__} has no MLP sub-module to read source='mlp' from")
        self.value: torch.Tensor | None = None
        self.stop_after = False
        self._handle: Any = None

    def _hook(self, _module: nn.Module, _inputs: Any, output: Any) -> None:
        # HF decoder layers return the residual stream (a tensor, or a tuple whose first item it is).
        self.value = output[0] if isinstance(output, tuple) else output
        if self.stop_after:
            raise _StopForward

    def __enter__(self) -> _LayerCapture:
        self._handle = self.module.register_forward_hook(self._hook)
        return self

    def __exit__(self, *exc: object) -> None:
        self._handle.remove()
        self.value = None


def _sampling_probs(logits: torch.Tensor, temperature: float, top_k: int, top_p: float) -> torch.Tensor:
    """Next-token probabilities after temperature, top-k and top-p (vLLM's rule and order)."""
    if temperature == 0:
        return torch.nn.functional.one_hot(logits.argmax(-1), logits.shape[-1]).to(logits.dtype)
    x = logits / temperature
    vocab = x.shape[-1]
    if 0 < top_k < vocab or top_p < 1.0:
        rows = x.shape[0]
        ks = torch.full((rows,), top_k if 0 < top_k < vocab else vocab, device=x.device)
        x = top_k_top_p_filter(x, ks, torch.full((rows,), top_p, device=x.device))
    return torch.softmax(x, dim=-1)


class HFBackend(SelfAwareBackend):
    """Self-aware back-end on a Hugging Face causal LM.

    Args:
        model: A short name from ``seakr_integrations.models.known_model_names()``, a local model directory, or an
            already loaded ``PreTrainedModel`` (then pass ``tokenizer`` too).
        tokenizer: Tokenizer for a pre-loaded model; loaded from the model directory otherwise.
        device: ``"cpu"``, ``"cuda"``, ...; default CUDA when available.
        dtype: Weights' dtype when loading (``"float32"`` by default: exact on CPU, needed for parity checks).

    Example:
        >>> backend = HFBackend("smollm2-135m-instruct")
        >>> out = backend.generate(["Question: What is the capital of France?\\nAnswer:"], k=5, max_tokens=16)
        >>> out[0].greedy.text, out[0].eos_vectors().shape
    """

    supports_logits = True

    def __init__(
        self,
        model: str | Path | nn.Module = DEFAULT_MODEL,
        *,
        tokenizer: Any = None,
        device: str | None = None,
        dtype: str | torch.dtype = "float32",
    ) -> None:
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self.device = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
        if isinstance(model, nn.Module):
            if tokenizer is None:
                raise ValueError("pass tokenizer= together with a pre-loaded model")
            self.model = model
            self.model_name = str(getattr(model.config, "name_or_path", "") or type(model).__name__)
        else:
            path = resolve_model(model)
            self.model = AutoModelForCausalLM.from_pretrained(str(path), dtype=dtype)
            tokenizer = tokenizer or AutoTokenizer.from_pretrained(str(path))
            self.model_name = str(model)
        self.model.to(self.device).eval()
        self.dtype = str(getattr(self.model, "dtype", "")).removeprefix("torch.") or None
        self.tokenizer = tokenizer
        self.layers = find_decoder_layers(self.model)
        config = self.model.config
        text_config = config.get_text_config() if hasattr(config, "get_text_config") else config
        self.num_layers = len(self.layers)
        self.hidden_size = int(text_config.hidden_size)
        self.max_context = int(getattr(text_config, "max_position_embeddings", 0) or tokenizer.model_max_length)
        eos = tokenizer.eos_token_id
        gen_eos = getattr(getattr(self.model, "generation_config", None), "eos_token_id", None)
        if eos is None:
            eos = gen_eos[0] if isinstance(gen_eos, list) else gen_eos
        if eos is None:
            raise ValueError(f"{self.model_name}: the tokenizer defines no EOS token, which SeaKR's read-out needs")
        self.eos_token_id = int(eos)
        extra_eos = gen_eos if isinstance(gen_eos, list) else [] if gen_eos is None else [gen_eos]
        self._stop_ids = {self.eos_token_id, *extra_eos}  # generation stops on any of them, as in vLLM

    def _decode(self, token_ids: list[int]) -> str:
        return self.tokenizer.decode(token_ids, skip_special_tokens=True)

    def _finish(self, token_ids: list[int], config: SamplingConfig) -> Continuation | None:
        """The finished continuation if ``token_ids`` ends generation (EOS, stop string, length), else ``None``."""
        if token_ids[-1] in self._stop_ids:
            return Continuation(self._decode(token_ids), list(token_ids), [], "stop")
        if config.stop and len(token_ids) > config.min_tokens:  # decode only when there are stops to look for
            text = self._decode(token_ids)
            start = len(self._decode(token_ids[: config.min_tokens])) if config.min_tokens else 0  # as vLLM
            hits = [(at, s) for s in config.stop if (at := text.find(s, start)) >= 0]
            if hits:
                at, stop = min(hits)
                return Continuation(text[:at], list(token_ids), [], "stop", stop_reason=stop)
        if len(token_ids) >= config.max_tokens:
            return Continuation(self._decode(token_ids), list(token_ids), [], "length")
        return None

    @torch.inference_mode()
    def _generate(
        self, prompts: list[str], prompt_ids: list[list[int]], configs: list[SamplingConfig], layer: int
    ) -> list[SelfAwareOutput]:
        return [
            self._generate_one(p, ids, config, layer)
            for p, ids, config in zip(prompts, prompt_ids, configs, strict=True)
        ]

    def _generate_one(self, prompt: str, ids: list[int], config: SamplingConfig, layer: int) -> SelfAwareOutput:
        rows_total = 1 + config.k
        generator = torch.Generator(device=self.device).manual_seed(config.seed)
        tokens: list[list[int]] = [[] for _ in range(rows_total)]
        logprobs: list[list[float]] = [[] for _ in range(rows_total)]
        lses: list[list[float]] = [[] for _ in range(rows_total)]
        done: list[Continuation | None] = [None] * rows_total
        with _LayerCapture(self.layers[layer], config.source) as capture:
            out = self.model(input_ids=torch.tensor([ids], device=self.device), use_cache=True, logits_to_keep=1)
            cache = out.past_key_values
            cache.batch_repeat_interleave(rows_total)
            logits = out.logits[:, -1, :].float().expand(rows_total, -1)
            rows = list(range(rows_total))  # original row index of each batch position
            while rows:
                early = len(tokens[rows[0]]) < config.min_tokens  # all rows advance together
                next_ids = self._pick(self._without_eos(logits) if early else logits, rows, config, generator)
                lse_t = torch.logsumexp(logits, dim=-1)  # one full-vocabulary reduction serves logprob and energy
                logp = (logits.gather(1, next_ids[:, None])[:, 0] - lse_t).tolist()
                lse = lse_t.tolist()
                chosen = next_ids.tolist()
                feed = list(chosen)
                keep: list[int] = []  # batch positions that go on decoding
                read: list[int] = []  # batch positions of samples that feed EOS to read their vector
                for j, r in enumerate(rows):
                    tokens[r].append(chosen[j])
                    logprobs[r].append(logp[j])
                    lses[r].append(lse[j])
                    finished = self._finish(tokens[r], config)
                    if finished is None:
                        keep.append(j)
                    else:
                        finished.logprobs, finished.logit_lse = logprobs[r], lses[r]
                        done[r] = finished
                        if r != 0 or config.greedy_vector:  # the greedy row's vector only when asked for
                            feed[j] = self.eos_token_id
                            read.append(j)
                run = sorted(keep + read)
                if not run:
                    break
                if len(run) < len(rows):
                    cache.batch_select_indices(torch.tensor(run, device=self.device))
                step_input = torch.tensor([[feed[j] for j in run]], device=self.device).T
                capture.stop_after = not keep  # only read-outs left: no need for the layers above or the logits
                step_started = time.perf_counter()
                try:
                    out = self.model(input_ids=step_input, past_key_values=cache, use_cache=True, logits_to_keep=1)
                except _StopForward:
                    out = None
                # Read-out cost: the read rows' share of this step (all of it when only read rows ran).
                self.last_timings["readout_s"] += (time.perf_counter() - step_started) * len(read) / len(run)
                position = {j: i for i, j in enumerate(run)}
                assert capture.value is not None
                for j in read:
                    done[rows[j]].eos_vector = capture.value[position[j], -1].float().cpu().numpy()  # type: ignore[union-attr]
                if not keep:
                    break
                kept_positions = [position[j] for j in keep]
                if len(keep) < len(run):
                    cache.batch_select_indices(torch.tensor(kept_positions, device=self.device))
                assert out is not None
                logits = out.logits[kept_positions, -1, :].float()
                rows = [rows[j] for j in keep]
        greedy, samples = done[0], done[1:]
        assert greedy is not None and all(s is not None for s in samples)
        return SelfAwareOutput(prompt, ids, greedy, samples, layer, config.source)  # type: ignore[arg-type]

    def _without_eos(self, logits: torch.Tensor) -> torch.Tensor:
        """``logits`` with every EOS id at ``-inf``, for picking only (log-probabilities use raw logits, as vLLM's)."""
        masked = logits.clone()
        masked[:, sorted(self._stop_ids)] = float("-inf")
        return masked

    def _pick(
        self, logits: torch.Tensor, rows: list[int], config: SamplingConfig, generator: torch.Generator
    ) -> torch.Tensor:
        """Next token per batch position: argmax for the greedy row 0, a sample for the others."""
        picked = torch.empty(len(rows), dtype=torch.long, device=logits.device)
        start = 1 if rows[0] == 0 else 0
        if start:
            picked[0] = logits[0].argmax()
        if start < len(rows):
            probs = _sampling_probs(logits[start:], config.temperature, config.top_k, config.top_p)
            picked[start:] = torch.multinomial(probs, 1, generator=generator)[:, 0]
        return picked

    @torch.inference_mode()
    def _last_token_vectors(self, sequences: list[list[int]], layer: int, source: HiddenSource) -> np.ndarray:
        width = max(len(s) for s in sequences)
        # Right padding: causal attention keeps every real position independent of the padding after it.
        ids = torch.full((len(sequences), width), self.eos_token_id, dtype=torch.long, device=self.device)
        mask = torch.zeros_like(ids)
        for i, s in enumerate(sequences):
            ids[i, : len(s)] = torch.tensor(s, device=self.device)
            mask[i, : len(s)] = 1
        with _LayerCapture(self.layers[layer], source) as capture:
            capture.stop_after = True
            try:
                self.model(input_ids=ids, attention_mask=mask, use_cache=False, logits_to_keep=1)
            except _StopForward:
                pass
            assert capture.value is not None
            last = torch.tensor([len(s) - 1 for s in sequences], device=self.device)
            vectors = capture.value[torch.arange(len(sequences), device=self.device), last]
            return vectors.float().cpu().numpy()

    def close(self) -> None:
        self.model = None  # type: ignore[assignment]
        if torch.cuda.is_available():
            torch.cuda.empty_cache()
