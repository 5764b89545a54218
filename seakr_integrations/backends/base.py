"""The one interface every self-aware LM back-end implements, ``generate`` and ``stream()``, with the input checks that
make every back-end fail the same way on the same bad input (docs/design/backends.md)."""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from seakr_integrations.backends.stream import Finished, GenerationStream
from seakr_integrations.outputs import SelfAwareOutput
from seakr_integrations.params import HiddenSource, SamplingConfig, max_tokens_too_large


def chat_template_prompt(tokenizer: Any, messages: Sequence[dict[str, str]]) -> str:
    """``messages`` in ``tokenizer``'s chat template with the assistant turn opened, as text; a ``ValueError`` when
    the tokenizer has no chat template."""
    if not getattr(tokenizer, "chat_template", None):
        raise ValueError("this model's tokenizer has no chat template: send a plain prompt instead")
    return tokenizer.apply_chat_template(list(messages), tokenize=False, add_generation_prompt=True)


def eos_scoring_sequence(prompt_ids: Sequence[int], token_ids: Sequence[int], eos_token_id: int) -> list[int]:
    """The token sequence whose last position gives a sample's EOS vector (SPEC section 2): the sample's last token
    replaced by EOS (a no-op when it already is EOS), so EOS is the input right after the sample's text."""
    return [*prompt_ids, *token_ids[:-1], eos_token_id]


class SelfAwareBackend(ABC):
    """A language model that returns, for each prompt, a greedy continuation and k samples with EOS vectors.
    Subclasses set ``model_name``, ``num_layers``, ``hidden_size``, ``max_context``, ``eos_token_id`` and
    implement ``tokenize``, ``_generate`` and ``_last_token_vectors``."""

    model_name: str
    num_layers: int
    hidden_size: int
    max_context: int
    eos_token_id: int
    supports_logits: bool = False
    """Whether greedy continuations carry ``logit_lse`` (needed by the energy estimator)."""
    dtype: str | None = None
    """The dtype the model runs in (``"float32"``...), where known: a calibration profile records it."""
    reads_hidden_states: bool = True
    """Whether samples carry EOS vectors (or a server's scores of them): what EigenScore needs.  ``False`` only for
    a plain OpenAI-compatible server (``RemoteBackend`` without seakr's routes), which returns logprobs alone: it has
    no layer to read, and its calibration profiles are its own (``profile_names.profile_key``)."""
    last_timings: dict[str, float]
    """Wall-clock seconds of the last ``generate`` call: ``total_s``, and ``readout_s``, the part spent reading
    the EOS vectors (the scoring pass on vLLM; the read-out rows' share of the decode steps on HF)."""

    tokenizer: Any
    """The model's Hugging Face tokenizer (both back-ends tokenise on the driver side with it)."""

    @property
    def has_chat_template(self) -> bool:
        """Whether the tokenizer has a chat template: what ``chat_template=None`` means for this model, in the
        prompt and in the calibration profile that fits it."""
        return bool(getattr(self.tokenizer, "chat_template", None))

    def uses_chat_template(self, requested: bool | None) -> bool:
        """A ``chat_template`` setting resolved for this model: ``None`` follows the tokenizer; a ``ValueError`` for
        ``True`` when the tokenizer has no chat template."""
        if requested is None:
            return self.has_chat_template
        if requested and not self.has_chat_template:
            raise ValueError(
                f"chat_template=True but {self.model_name}'s tokenizer has no chat template; leave chat_template "
                "unset (None) to follow the tokenizer, or set it to False"
            )
        return requested

    def tokenize(self, text: str) -> list[int]:
        """Token ids of ``text`` exactly as the back-end feeds a prompt to the model."""
        return list(self.tokenizer(text).input_ids)

    @abstractmethod
    def _generate(
        self, prompts: list[str], prompt_ids: list[list[int]], configs: list[SamplingConfig], layer: int
    ) -> list[SelfAwareOutput]:
        """Run validated prompts (``configs[i]`` for prompt ``i``) on the resolved ``layer``, ``configs[0].source``."""

    @abstractmethod
    def _last_token_vectors(self, sequences: list[list[int]], layer: int, source: HiddenSource) -> np.ndarray:
        """``last_token_vectors`` on validated input."""

    def last_token_vectors(
        self, sequences: Sequence[Sequence[int]], *, layer: int | None = None, source: HiddenSource = "mlp"
    ) -> np.ndarray:
        """Hidden state at the last position of each token sequence, ``(len(sequences), hidden_size)`` float32: the
        "scoring pass" of SPEC section 10 (``eos_scoring_sequence(...)`` in, the sample's EOS vector out), exposed so
        that back-ends can be checked against each other on identical tokens."""
        layer = self.resolve_layer(layer)
        if source not in ("mlp", "residual"):
            raise ValueError(f"source={source!r}: choose 'mlp' or 'residual'")
        if not sequences or any(len(s) == 0 for s in sequences):
            raise ValueError("last_token_vectors needs at least one non-empty token sequence")
        return self._last_token_vectors([[int(t) for t in s] for s in sequences], layer, source)

    def chat_prompt(self, user_message: str) -> str:
        """``user_message`` in the model's chat template (assistant turn opened), or unchanged when it has none:
        SeaKR's prompts are plain text, which instruct models answer better inside their template."""
        if not self.has_chat_template:
            return user_message
        return self.chat_messages_prompt([{"role": "user", "content": user_message}])

    def chat_messages_prompt(self, messages: Sequence[dict[str, str]]) -> str:
        """A conversation (``{"role", "content"}`` turns) in the model's chat template, with the assistant turn
        opened: the one place a prompt is put in a chat template (see :func:`chat_template_prompt`)."""
        return chat_template_prompt(self.tokenizer, messages)

    @property
    def default_layer(self) -> int:
        """SeaKR's layer: ``L/2 - 1`` counted from 0 (layer 16 of 32 in 1-based terms for a 7B Llama)."""
        return max(self.num_layers // 2 - 1, 0)

    def resolve_layer(self, layer: int | None) -> int:
        """``layer`` checked against the model, or the default when ``None``.  A back-end that reads no hidden states
        has none: ``None`` stands for it as 0 (what its outputs record), any other is refused (it changes nothing)."""
        if not self.reads_hidden_states:
            if layer is not None:
                raise ValueError(
                    f"layer={layer!r}: {self.model_name} is served by a plain OpenAI-compatible server, which returns "
                    "no hidden states, so there is no layer to read; leave layer unset"
                )
            return 0
        if layer is None:
            return self.default_layer
        if not isinstance(layer, (int, np.integer)) or not 0 <= layer < self.num_layers:
            raise ValueError(
                f"layer={layer!r} is out of range for {self.model_name}: it has {self.num_layers} decoder layers, "
                f"so use 0..{self.num_layers - 1} (default {self.default_layer}, i.e. L/2 - 1)"
            )
        return int(layer)

    def generate(
        self, prompts: Sequence[str], config: SamplingConfig | Sequence[SamplingConfig] | None = None, **overrides: Any
    ) -> list[SelfAwareOutput]:
        """Greedy continuation plus ``k`` samples with EOS vectors: one ``SelfAwareOutput`` per prompt, in order.

        Args:
            prompts: Prompt texts (already formatted; a chat template is the caller's choice).
            config: Sampling parameters (SeaKR's defaults when omitted), or one per prompt so that calls of many
                questions share one batch; they must agree on ``layer`` and ``source``, read for the whole batch.
            **overrides: ``SamplingConfig`` fields to change for every prompt (``k=10``, ``stop=["\\n"]``...).

        Raises:
            ValueError: Empty prompt list or prompt, bad sampling parameters, a config list of the wrong length or
                with mixed layers/sources, layer out of range, or a prompt that does not fit the model's context
                together with ``max_tokens``.
        """
        prompts = self._checked_prompts(prompts)
        configs = self._per_prompt_configs(config, len(prompts), overrides)
        layer = self.resolve_layer(configs[0].layer)
        prompt_ids = [self.tokenize(p) for p in prompts]
        for i, (ids, cfg) in enumerate(zip(prompt_ids, configs, strict=True)):
            self._check_fits(i, ids, cfg)
        started = time.perf_counter()
        self.last_timings = {"readout_s": 0.0}
        outputs = self._generate(prompts, prompt_ids, configs, layer)
        self.last_timings["total_s"] = time.perf_counter() - started
        return outputs

    def stream(self) -> GenerationStream:
        """The non-blocking path (``GenerationStream``; use it as a context manager).  This default batches whatever is
        pending at each ``collect`` (``BatchingStream``); ``VLLMBackend`` adds each prompt to its running engine."""
        return BatchingStream(self)

    def _check_fits(self, index: int, ids: Sequence[int], config: SamplingConfig) -> None:
        # +1: the EOS that is fed back as input to read the vector takes one more position.
        if config.max_tokens + 2 > self.max_context:
            raise ValueError(max_tokens_too_large(config.max_tokens, self.model_name, self.max_context))
        if len(ids) + config.max_tokens + 1 > self.max_context:
            raise ValueError(
                f"prompt {index} has {len(ids)} tokens; with max_tokens={config.max_tokens} (+1 for the EOS read-out) "
                f"it exceeds {self.model_name}'s context of {self.max_context} tokens: shorten the prompt "
                f"(e.g. fewer passages or exemplars) to at most {self.max_context - config.max_tokens - 1} tokens "
                "or lower max_tokens"
            )

    @staticmethod
    def _checked_prompts(prompts: Sequence[str]) -> list[str]:
        if isinstance(prompts, str):
            raise ValueError("prompts must be a list of strings; wrap a single prompt as [prompt]")
        prompts = list(prompts)
        if not prompts:
            raise ValueError("prompts is empty: pass at least one prompt")
        for i, p in enumerate(prompts):
            if not isinstance(p, str) or not p.strip():
                raise ValueError(f"prompt {i} is empty (or not a string): every prompt needs some text")
        return prompts

    @staticmethod
    def _per_prompt_configs(
        config: SamplingConfig | Sequence[SamplingConfig] | None, n: int, overrides: dict[str, Any]
    ) -> list[SamplingConfig]:
        if config is None or isinstance(config, SamplingConfig):
            configs = [config or SamplingConfig()] * n
        else:
            configs = list(config)
            if len(configs) != n or not all(isinstance(c, SamplingConfig) for c in configs):
                raise ValueError(
                    f"config is a list of {len(configs)} item(s) for {n} prompt(s): pass one SamplingConfig for "
                    "all prompts or exactly one SamplingConfig per prompt"
                )
        if overrides:
            configs = [c.with_(**overrides) for c in configs]
        shared = {(c.layer, c.source) for c in configs}
        if len(shared) > 1:
            raise ValueError(
                "the prompts of one generate call must read the same layer and source, got "
                f"{sorted(map(str, shared))}: split the call by (layer, source)"
            )
        return configs

    def close(self) -> None:  # noqa: B027 - optional hook, a no-op unless the back-end holds resources
        """Release the model (engines, worker processes, memory).  Safe to call twice."""

    def __enter__(self) -> SelfAwareBackend:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self.model_name!r}, layers={self.num_layers}, hidden={self.hidden_size})"

    def profile_layer(self, layer: int | None) -> int | None:
        """The layer a calibration profile of this back-end is keyed by: the resolved layer, or ``None`` when the
        back-end reads no hidden states (its profiles say so in their key; see ``profile_names.profile_key``)."""
        resolved = self.resolve_layer(layer)
        return resolved if self.reads_hidden_states else None


class BatchingStream(GenerationStream):
    """Runs whatever is pending at each ``collect`` as one ``generate`` call per (layer, source), so prompts submitted
    while a batch runs join the next one; a failed batch is run again prompt by prompt, so a bad prompt fails only its
    own ticket."""

    def __init__(self, backend: SelfAwareBackend) -> None:
        self.backend = backend
        self._pending: dict[int, tuple[str, SamplingConfig]] = {}
        self._next_ticket = 0

    def submit(self, prompt: str, config: SamplingConfig) -> int:
        self.backend._checked_prompts([prompt])
        if not isinstance(config, SamplingConfig):
            raise ValueError(f"config must be a SamplingConfig, got {type(config).__name__}")
        ticket = self._next_ticket
        self._next_ticket += 1
        self._pending[ticket] = (prompt, config)
        return ticket

    @property
    def pending(self) -> int:
        return len(self._pending)

    def collect(self) -> list[Finished]:
        batch, self._pending = self._pending, {}
        groups: dict[tuple[int | None, str], list[int]] = {}
        for ticket, (_, config) in batch.items():
            groups.setdefault((config.layer, config.source), []).append(ticket)
        return [item for tickets in groups.values() for item in self._run(tickets, batch)]

    def _run(self, tickets: list[int], batch: dict[int, tuple[str, SamplingConfig]]) -> list[Finished]:
        try:
            outputs = self.backend.generate([batch[t][0] for t in tickets], [batch[t][1] for t in tickets])
        except Exception as error:
            if len(tickets) == 1:
                return [(tickets[0], error)]
            return [item for t in tickets for item in self._run([t], batch)]
        return list(zip(tickets, outputs, strict=True))

    def cancel(self, tickets: Iterable[int] | None = None) -> None:
        for ticket in list(self._pending) if tickets is None else tickets:
            self._pending.pop(ticket, None)
