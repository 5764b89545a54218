"""Prompts in flight on a ``VLLMBackend``'s running engine, the back-end's non-blocking path: each ``collect`` runs one
engine step, and a sample's read-out joins the batch the step it finishes (docs/design/backends.md)."""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from seakr_integrations.backends.base import eos_scoring_sequence
from seakr_integrations.backends.stream import Finished, GenerationStream
from seakr_integrations.backends.vllm_worker import token_digest
from seakr_integrations.outputs import Continuation, SelfAwareOutput
from seakr_integrations.params import SamplingConfig


class PrefillCounter:
    """Prompt tokens sent to the engine and those its prefix cache already held, per request kind (``greedy``,
    ``samples``, ``readout``): how much of each call's prompt SeaKR's calls share with earlier ones."""

    def __init__(self) -> None:
        self.prompt: dict[str, int] = {}
        self.cached: dict[str, int] = {}

    def add(self, prompt_tokens: int, cached_tokens: int, kind: str) -> None:
        self.prompt[kind] = self.prompt.get(kind, 0) + prompt_tokens
        self.cached[kind] = self.cached.get(kind, 0) + cached_tokens

    def to_dict(self) -> dict[str, dict[str, int]]:
        return {kind: {"prompt_tokens": n, "cached_tokens": self.cached[kind]} for kind, n in self.prompt.items()}


class EngineOwner(Protocol):
    """What a ``VLLMStream`` uses of the back-end whose engine it drives (``backends.vllm.VLLMBackend``): the stream
    is a view of that back-end's engine, not a second owner, so it reads and sets the back-end's own state (the one
    open stream, the call count, the capture hook) through these members."""

    model_name: str
    llm: Any
    """The ``vllm.LLM``; ``None`` once the back-end is closed."""
    eos_token_id: int
    supports_logits: bool
    prefill: PrefillCounter
    _stream: VLLMStream | None
    _calls: int

    def tokenize(self, text: str) -> list[int]: ...

    def resolve_layer(self, layer: int | None) -> int: ...

    def request_params(self, config: SamplingConfig) -> tuple[Any, Any, Any]: ...

    def _checked_prompts(self, prompts: Sequence[str]) -> list[str]: ...

    def _check_fits(self, index: int, ids: Sequence[int], config: SamplingConfig) -> None: ...

    def _ensure_hook(self, layer: int, source: str) -> None: ...

    def _rpc(self, method: str, *args: Any) -> list[Any]: ...

    def _pop_captured(self) -> tuple[dict[str, np.ndarray], int, dict[str, dict[int, float]]]: ...


@dataclass
class _Prompt:
    """One submitted prompt and what has come back for it so far."""

    prompt: str
    ids: list[int]
    config: SamplingConfig
    layer: int
    greedy_id: str
    greedy: Continuation | None = None
    samples: list[Continuation | None] = field(default_factory=list)
    keys: list[str | None] = field(default_factory=list)
    """The read-out key (``token_digest``) of each finished sample."""
    greedy_key: str | None = None
    """The greedy continuation's read-out key, when its vector is asked for (``config.greedy_vector``)."""

    def read_keys(self) -> list[str | None]:
        """Every read-out this prompt waits for."""
        return [*self.keys, self.greedy_key] if self.config.greedy_vector else list(self.keys)

    def generated(self) -> bool:
        return self.greedy is not None and all(s is not None for s in self.samples)


@dataclass
class _Readout:
    request_id: str
    waiting: set[int]
    done: bool = False


class VLLMStream(GenerationStream):
    """The non-blocking path of ``VLLMBackend`` (get it with ``backend.stream()``); a ``RuntimeError`` when the back-end
    already has an open stream (a ``VLLMBackend`` serves one driver at a time)."""

    def __init__(self, backend: EngineOwner) -> None:
        if backend._stream is not None:
            raise RuntimeError(
                f"{backend.model_name}: this VLLMBackend already has an open stream; close it first (one driver "
                "at a time; wrap the back-end with concurrent_backend() to share it between threads)"
            )
        if backend.llm is None:
            raise RuntimeError(f"{backend.model_name}: this VLLMBackend is closed")
        self.backend = backend
        self.engine = backend.llm.llm_engine
        backend._calls += 1
        self._tag = f"seakr{backend._calls}"
        self._prompts: dict[int, _Prompt] = {}
        self._roles: dict[str, tuple[str, Any]] = {}  # request id -> ("greedy" | "samples", ticket) | ("readout", key)
        self._readouts: dict[str, _Readout] = {}
        self._vectors: dict[str, np.ndarray] = {}
        self._lse: dict[str, dict[int, float]] = {}
        self._params: dict[SamplingConfig, tuple[Any, Any, Any]] = {}
        self._reading: tuple[int, str] | None = None
        self._next_ticket = 0
        self._next_readout = 0
        self._closed = False
        self.last_sample_done: float | None = None
        """When the last sample finished (``perf_counter``): what follows it is read-out time."""
        backend._stream = self

    def submit(self, prompt: str, config: SamplingConfig) -> int:
        self.backend._checked_prompts([prompt])
        if not isinstance(config, SamplingConfig):
            raise ValueError(f"config must be a SamplingConfig, got {type(config).__name__}")
        return self.submit_ids(prompt, self.backend.tokenize(prompt), config)

    def submit_ids(self, prompt: str, ids: list[int], config: SamplingConfig, index: int = 0) -> int:
        """``submit`` for a prompt already tokenised (``index`` names it in a context error)."""
        if self._closed:
            raise RuntimeError("this stream is closed: open a new one with backend.stream()")
        backend = self.backend
        backend._check_fits(index, ids, config)
        layer = backend.resolve_layer(config.layer)
        self._read(layer, config.source)
        if config not in self._params:
            self._params[config] = backend.request_params(config)
        greedy_params, sample_params, _ = self._params[config]
        ticket = self._next_ticket
        self._next_ticket += 1
        entry = _Prompt(prompt, ids, config, layer, f"{self._tag}g{ticket}")
        entry.samples, entry.keys = [None] * config.k, [None] * config.k
        self._prompts[ticket] = entry
        self._add(entry.greedy_id, ids, greedy_params, ("greedy", ticket))
        if config.k:
            self._add(f"{self._tag}s{ticket}", ids, sample_params, ("samples", ticket))
        return ticket

    def _read(self, layer: int, source: str) -> None:
        """Point the capture hook at (layer, source); only possible while nothing is in flight."""
        if self._reading == (layer, source):
            return
        if self._prompts:
            raise ValueError(
                f"this prompt reads layer {layer} ({source}) while the prompts in flight read layer "
                f"{self._reading[0]} ({self._reading[1]}): one stream reads one layer and source at a time"  # type: ignore[index]
            )
        backend = self.backend
        backend._ensure_hook(layer, source)
        backend._rpc("seakr_set_capture", True, f"{self._tag}g" if backend.supports_logits else "")
        self._reading = (layer, source)

    def _add(self, request_id: str, ids: list[int], params: Any, role: tuple[str, Any]) -> None:
        from vllm.inputs import TokensPrompt

        self._roles[request_id] = role
        self.engine.add_request(request_id, TokensPrompt(prompt_token_ids=ids), params)

    @property
    def pending(self) -> int:
        return len(self._prompts)

    def collect(self) -> list[Finished]:
        if not self._prompts:
            return []
        if not self.engine.has_unfinished_requests():
            return self._complete(engine_idle=True)
        fetch = False
        for out in self.engine.step():
            role = self._roles.get(out.request_id)
            if role is None:
                continue  # a cancelled request's last output
            kind, ref = role
            if out.finished:
                del self._roles[out.request_id]
                self.backend.prefill.add(len(out.prompt_token_ids or ()), out.num_cached_tokens or 0, kind)
            if kind == "greedy" and out.finished:
                entry = self._prompts[ref]
                entry.greedy = continuation(out.outputs[0])
                if entry.config.greedy_vector:
                    entry.greedy_key = self._read_out(ref, entry, list(out.outputs[0].token_ids))
                fetch = fetch or self.backend.supports_logits
            elif kind == "samples":
                self._take_samples(ref, out.outputs)
            elif kind == "readout" and out.finished and ref in self._readouts:
                self._readouts[ref].done = True
                fetch = True
        if fetch:
            self._fetch()
        return self._complete(engine_idle=False)

    def _take_samples(self, ticket: int, outputs: list[Any]) -> None:
        entry = self._prompts[ticket]
        for c in outputs:
            if c.finish_reason is None or entry.samples[c.index] is not None:
                continue
            entry.samples[c.index] = continuation(c)
            self.last_sample_done = time.perf_counter()
            entry.keys[c.index] = self._read_out(ticket, entry, list(c.token_ids))

    def _read_out(self, ticket: int, entry: _Prompt, token_ids: list[int]) -> str:
        """Ask for the vector at EOS after ``token_ids``; returns its key (identical continuations share one)."""
        sequence = eos_scoring_sequence(entry.ids, token_ids, self.backend.eos_token_id)
        key = token_digest(sequence)
        readout = self._readouts.get(key)
        if readout is not None:
            readout.waiting.add(ticket)
            return key
        request_id = f"{self._tag}r{self._next_readout}"
        self._next_readout += 1
        self._readouts[key] = _Readout(request_id, {ticket})
        self._add(request_id, sequence, self._params[entry.config][2], ("readout", key))
        return key

    def _fetch(self) -> None:
        """Take the vectors and logsumexps the workers captured since the last fetch."""
        vectors, _, lse = self.backend._pop_captured()
        for key, vector in vectors.items():
            if key in self._readouts:  # (engine outputs may report a read-out a step after its forward pass)
                self._vectors[key] = vector
        for rid, by_position in lse.items():
            self._lse.setdefault(rid, {}).update(by_position)

    def _complete(self, *, engine_idle: bool) -> list[Finished]:
        """The prompts whose greedy continuation, samples and read-outs are all back, as outputs."""
        finished: list[Finished] = []
        for ticket, entry in list(self._prompts.items()):
            # Every read-out finished in the engine and its vector fetched.
            keys = entry.read_keys()
            ready = entry.generated() and all(k in self._vectors and self._readouts[k].done for k in keys)
            if not ready and not engine_idle:
                continue
            result: SelfAwareOutput | Exception
            try:
                result = self._output(entry)
            except RuntimeError as error:
                result = error
            finished.append((ticket, result))
            self._abort(self._release(ticket))
        return finished

    def _output(self, entry: _Prompt) -> SelfAwareOutput:
        if not entry.generated():
            raise RuntimeError("vLLM finished without returning every continuation of this prompt")
        greedy = entry.greedy
        assert greedy is not None
        if self.backend.supports_logits:
            greedy.logit_lse = greedy_logsumexp(self._lse.pop(entry.greedy_id, {}), len(greedy.token_ids))
        samples = []
        for sample, key in zip(entry.samples, entry.keys, strict=True):
            assert sample is not None
            if key not in self._vectors:
                raise RuntimeError("vLLM returned no hidden state for a sample; the capture hook missed a request")
            sample.eos_vector = self._vectors[key]  # type: ignore[index]
            samples.append(sample)
        if entry.config.greedy_vector:
            if entry.greedy_key not in self._vectors:
                raise RuntimeError("vLLM returned no hidden state for the greedy continuation; the hook missed it")
            greedy.eos_vector = self._vectors[entry.greedy_key]  # type: ignore[index]
        return SelfAwareOutput(entry.prompt, entry.ids, greedy, samples, entry.layer, entry.config.source)

    def _release(self, ticket: int) -> list[str]:
        """Forget ``ticket``; returns its request ids still running (read-outs shared with others stay)."""
        entry = self._prompts.pop(ticket)
        running = [rid for rid in (entry.greedy_id, f"{self._tag}s{ticket}") if rid in self._roles]
        for key in {k for k in entry.read_keys() if k is not None}:
            readout = self._readouts.get(key)
            if readout is None:
                continue
            readout.waiting.discard(ticket)
            if not readout.waiting:
                del self._readouts[key]
                self._vectors.pop(key, None)
                if readout.request_id in self._roles:
                    running.append(readout.request_id)
        self._lse.pop(entry.greedy_id, None)
        return running

    def cancel(self, tickets: Iterable[int] | None = None) -> None:
        chosen = list(self._prompts) if tickets is None else [t for t in tickets if t in self._prompts]
        self._abort([rid for t in chosen for rid in self._release(t)])

    def _abort(self, request_ids: list[str]) -> None:
        for rid in request_ids:
            self._roles.pop(rid, None)
        if request_ids and self.backend.llm is not None:
            self.engine.abort_request(request_ids, internal=False)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            self.cancel()
            if self._reading is not None and self.backend.llm is not None:
                self.backend._rpc("seakr_set_capture", False)
        finally:
            self.backend._stream = None


def continuation(c: Any) -> Continuation:
    """vLLM ``CompletionOutput`` -> ``Continuation`` (logprob of each sampled token)."""
    token_ids = list(c.token_ids)
    logprobs = [float(step[t].logprob) for step, t in zip(c.logprobs or [], token_ids, strict=False)]
    stop = c.stop_reason if isinstance(c.stop_reason, str) else None
    reason = "length" if c.finish_reason == "length" else "stop"
    return Continuation(c.text, token_ids, logprobs, reason, stop_reason=stop)


def greedy_logsumexp(by_position: Mapping[int, float], n: int) -> list[float]:
    """The raw logits' logsumexp at each of the ``n`` greedy positions (recorded by position by the worker); a
    ``RuntimeError`` when the logits hook missed one."""
    values = [by_position[i] for i in range(n) if i in by_position]
    if len(values) < n:
        raise RuntimeError(
            f"vLLM returned no raw-logit logsumexp for some of the {n} greedy tokens; the logits hook missed a step"
        )
    return values
