"""Self-aware generation inside ``vllm serve``: the greedy step, k samples and their EOS read-outs on the server's own
async engine, for any number of concurrent HTTP requests (docs/design/backends.md)."""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from seakr_integrations.backends.base import eos_scoring_sequence
from seakr_integrations.backends.vllm_settings import request_params, takes_seeds
from seakr_integrations.backends.vllm_stream import continuation, greedy_logsumexp
from seakr_integrations.backends.vllm_worker import raise_v2_runner
from seakr_integrations.outputs import Continuation, SelfAwareOutput, token_offsets
from seakr_integrations.params import SamplingConfig
from seakr_integrations.serving.worker_fetch import WorkerFetch
from seakr_integrations.uncertainty.estimate import estimate
from seakr_integrations.uncertainty.registry import GENERATE_PROVIDES, estimators_for

GREEDY_PREFIX = "seakrg"
"""Request ids of greedy requests (the worker records their raw logits' logsumexp)."""
READOUT_PREFIX = "seakrr"
"""Request ids of read-out requests (the worker keeps their last position's vector under the id)."""


@dataclass(frozen=True)
class ModelFacts:
    model: str
    num_layers: int
    hidden_size: int
    max_context: int
    eos_token_id: int
    vocab_size: int
    weights: str
    """The model's directory or hub name without its path: replicas load the same weights (``serving.replicas``)."""


def _on_cpu() -> bool:
    from vllm.platforms import current_platform

    return bool(current_platform.is_cpu())


def _scheduler(engine: Any) -> Any:
    return getattr(getattr(engine, "vllm_config", None), "scheduler_config", None)


class ServerEngine:
    """The self-aware generation of one ``vllm serve`` process on vLLM's ``EngineClient``, reading one ``layer`` and
    ``source`` (requests for another are refused).  ``custom_top_k_top_p``: whether seakr's top-k/top-p logits
    processor is loaded (else vLLM's applies the same rule)."""

    def __init__(
        self,
        engine: Any,
        facts: ModelFacts,
        tokenizer: Any,
        layer: int,
        source: str,
        supports_logits: bool,
        custom_top_k_top_p: bool,
        *,
        takes_seeds: bool = True,
        dtype: str | None = None,
    ) -> None:
        from vllm import SamplingParams

        self.takes_seeds = takes_seeds
        """Whether requests may carry their own seed (``vllm_settings.takes_seeds``: not on a CPU engine that chunks
        prefills); without, the samples are drawn unseeded and a request that sends a seed is refused."""
        self.dtype = dtype
        """The dtype the model runs in (``"float32"``...)."""
        self.engine = engine
        self.facts = facts
        self.tokenizer = tokenizer
        self.layer = layer
        self.source = source
        self.supports_logits = supports_logits
        self._custom = custom_top_k_top_p
        self._params = SamplingParams
        self.fetch = WorkerFetch(engine)

    @classmethod
    async def start(cls, engine: Any, layer: int | None, source: str, custom_top_k_top_p: bool) -> ServerEngine:
        """Install the read-out hook in every worker and start capturing; raises with the setting to change when
        the engine cannot run it."""
        config = engine.model_config
        num_layers = int(config.get_total_num_hidden_layers())
        layer = max(num_layers // 2 - 1, 0) if layer is None else int(layer)
        if not 0 <= layer < num_layers:
            raise ValueError(f"layer {layer} is out of range for a model with {num_layers} decoder layers")
        if not getattr(config, "enforce_eager", False):
            raise ValueError(
                "the engine runs compiled (no --enforce-eager): the hidden-state hook would never fire; start the "
                "server with `seakr serve`, or pass --enforce-eager to vllm serve"
            )
        try:
            (installed, *_) = await engine.collective_rpc("seakr_install_hook", args=(layer, source))
            await engine.collective_rpc("seakr_set_capture", args=(True, GREEDY_PREFIX, READOUT_PREFIX))
        except Exception as exc:
            raise_v2_runner(exc)
            raise ValueError(
                "the vLLM workers have no seakr methods: start the server with `seakr serve`, or pass "
                "--worker-extension-cls seakr_integrations.backends.vllm_worker.SeaKRWorkerExtension to vllm serve "
                f"({type(exc).__name__}: {exc})"
            ) from exc
        tokenizer = engine.get_tokenizer()
        name = config.served_model_name or config.model
        facts = ModelFacts(
            str(name[0] if isinstance(name, (list, tuple)) else name),
            num_layers,
            int(config.get_hidden_size()),
            int(config.max_model_len),
            int(tokenizer.eos_token_id),
            int(config.get_vocab_size()),
            Path(str(config.model)).name,
        )
        return cls(
            engine,
            facts,
            tokenizer,
            layer,
            source,
            bool(installed.get("logits")),
            custom_top_k_top_p,
            takes_seeds=takes_seeds(_on_cpu(), bool(getattr(_scheduler(engine), "enable_chunked_prefill", False))),
            dtype=str(getattr(config, "dtype", "")).removeprefix("torch.") or None,
        )

    @property
    def estimators(self) -> tuple[str, ...]:
        """What this server scores: every estimator one generate call can feed (raw logits only if it has them)."""
        return estimators_for(GENERATE_PROVIDES if self.supports_logits else GENERATE_PROVIDES - {"logits"})

    def info(self) -> dict[str, Any]:
        f = self.facts
        return {
            "model": f.model,
            "weights": f.weights,
            "num_layers": f.num_layers,
            "hidden_size": f.hidden_size,
            "max_context": f.max_context,
            "eos_token_id": f.eos_token_id,
            "default_layer": self.layer,
            "layers": [self.layer],
            "source": self.source,
            "estimators": list(self.estimators),
            "supports_logits": self.supports_logits,
            "chat_template": bool(getattr(self.tokenizer, "chat_template", None)),
            "seeded_sampling": self.takes_seeds,
            "dtype": self.dtype,
        }

    async def generate(self, prompt: str, ids: list[int], config: SamplingConfig) -> SelfAwareOutput:
        """One prompt's greedy continuation and samples with their EOS vectors (and the greedy one's, when
        ``config.greedy_vector`` asks for it)."""
        from vllm.inputs import TokensPrompt

        greedy_params, sample_params, readout_params = request_params(
            self._params, config, custom_top_k_top_p=self._custom, seeded=self.takes_seeds
        )
        tag = uuid.uuid4().hex
        greedy_id = f"{GREEDY_PREFIX}{tag}"
        greedy_task = asyncio.ensure_future(self._last(TokensPrompt(prompt_token_ids=ids), greedy_params, greedy_id))
        samples: list[Continuation | None] = [None] * config.k
        readouts: dict[str, asyncio.Future] = {}  # identical samples share one read-out
        keys: list[str | None] = [None] * config.k  # each sample's read-out
        try:
            if sample_params is not None:
                async for out in self.engine.generate(
                    TokensPrompt(prompt_token_ids=ids), sample_params, f"seakrs{tag}"
                ):
                    for c in out.outputs:
                        if c.finish_reason is None or samples[c.index] is not None:
                            continue
                        samples[c.index] = continuation(c)
                        sequence = eos_scoring_sequence(ids, list(c.token_ids), self.facts.eos_token_id)
                        key = ",".join(map(str, sequence[len(ids) :]))
                        if key not in readouts:
                            readouts[key] = asyncio.ensure_future(self._readout(sequence, readout_params))
                        keys[c.index] = key
            greedy = continuation(await greedy_task)
            vectors = dict(zip(readouts, await asyncio.gather(*readouts.values()), strict=True))
        except BaseException:
            for task in (greedy_task, *readouts.values()):
                task.cancel()
            raise
        if self.supports_logits:
            greedy.logit_lse = greedy_logsumexp(await self.fetch.logsumexp(greedy_id), len(greedy.token_ids))
        # where each greedy token ends in the text, so that the client masks words without a tokenizer round trip
        greedy.offsets = token_offsets(greedy, lambda t: self.tokenizer.decode(t, skip_special_tokens=True))
        if any(s is None for s in samples):
            raise RuntimeError("the engine finished without returning every sample")
        for sample, key in zip(samples, keys, strict=True):
            sample.eos_vector = vectors[key]  # type: ignore[union-attr,index]
        if config.greedy_vector:  # what a state probe reads: the greedy continuation's vector at EOS
            greedy.eos_vector = await self._readout(
                eos_scoring_sequence(ids, list(greedy.token_ids), self.facts.eos_token_id), readout_params
            )
        return SelfAwareOutput(prompt, ids, greedy, samples, self.layer, self.source)  # type: ignore[arg-type]

    async def vectors(self, sequences: list[list[int]]) -> np.ndarray:
        """The hidden state at the last position of each token sequence (the stand-alone scoring pass)."""
        readout = self._params(max_tokens=1, temperature=0.0, detokenize=False)
        return np.stack(await asyncio.gather(*(self._readout(s, readout) for s in sequences)))

    async def _last(self, prompt: Any, params: Any, request_id: str) -> Any:
        last = None
        async for out in self.engine.generate(prompt, params, request_id):
            last = out
        if last is None or not last.finished:
            raise RuntimeError("the engine ended a request without a result")
        return last.outputs[0]

    async def _readout(self, sequence: list[int], params: Any) -> np.ndarray:
        from vllm.inputs import TokensPrompt

        request_id = f"{READOUT_PREFIX}{uuid.uuid4().hex}"
        await self._last(TokensPrompt(prompt_token_ids=sequence), params, request_id)
        return await self.fetch.vector(request_id)

    def scores(self, output: SelfAwareOutput, estimators: tuple[str, ...], alpha: float) -> dict[str, Any]:
        """Each requested estimator's uncertainty (energy only where the model exposes its logits)."""
        wanted = [e for e in estimators if e in self.estimators]
        if not output.samples:
            wanted = [e for e in wanted if e in ("perplexity", "energy")]
        return {name: estimate(output, name, alpha) for name in wanted}
