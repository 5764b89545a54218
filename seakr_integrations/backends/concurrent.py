"""One self-aware back-end shared safely by threads: concurrent ``generate`` calls are queued and run as one batch.
Framework async paths run model calls in threads, and no back-end may be entered twice (docs/design/backends.md).
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Sequence
from concurrent.futures import Future
from typing import Any

import numpy as np

from seakr_integrations.backends.base import SelfAwareBackend
from seakr_integrations.backends.proxy import ProxyBackend
from seakr_integrations.outputs import SelfAwareOutput
from seakr_integrations.params import HiddenSource, SamplingConfig


class _Request(Future):
    """One caller's ``generate`` call waiting in the queue; its result is the caller's outputs (or error)."""

    def __init__(self, prompts: Any, config: Any, overrides: dict[str, Any]) -> None:
        super().__init__()
        self.prompts, self.config, self.overrides = prompts, config, overrides


class ConcurrentBackend(ProxyBackend):
    """A thread-safe view of ``inner``: one back-end call at a time, concurrent calls batched.  Get instances with
    ``concurrent_backend(backend)`` so that every component using one back-end shares one lock."""

    def __init__(self, inner: SelfAwareBackend) -> None:
        super().__init__(inner)
        self._cond = threading.Condition()
        self._queue: list[_Request] = []
        self._busy = False
        self.calls_received = 0
        """``generate`` calls received so far."""
        self.batches_run = 0
        """Back-end calls made so far (fewer than ``calls_received`` when concurrent calls were merged)."""

    def generate(
        self, prompts: Sequence[str], config: SamplingConfig | Sequence[SamplingConfig] | None = None, **overrides: Any
    ) -> list[SelfAwareOutput]:
        """``inner.generate``, waiting for the back-end when another thread uses it; calls that wait together run
        together as one batch (each caller gets its own outputs and its own errors)."""
        request = _Request(prompts, config, overrides)
        with self._cond:
            self.calls_received += 1
            self._queue.append(request)
            while not request.done() and self._busy:
                self._cond.wait()
            if request.done():
                return request.result()
            batch, self._queue, self._busy = self._queue, [], True
        try:
            self._run(batch)
        finally:
            with self._cond:
                self._busy = False
                self._cond.notify_all()
        return request.result()

    def _run(self, batch: list[_Request]) -> None:
        """Serve ``batch`` with as few back-end calls as possible; never leaves a request unfinished."""
        try:
            if len(batch) == 1:
                self._serve_alone(batch[0])
                return
            groups: dict[tuple[Any, str], list[tuple[_Request, list[str], list[SamplingConfig]]]] = {}
            for request in batch:
                try:  # validated as generate would, so that it can join a merged call
                    prompts = self._checked_prompts(request.prompts)
                    configs = self._per_prompt_configs(request.config, len(prompts), request.overrides)
                except Exception as exc:  # a bad request fails alone, as it would have without company
                    request.set_exception(exc)
                    continue
                # One back-end call reads one (layer, source).
                groups.setdefault((configs[0].layer, configs[0].source), []).append((request, prompts, configs))
            for group in groups.values():
                self._serve_group(group)
        finally:
            for request in batch:
                if not request.done():
                    request.set_exception(RuntimeError("the shared back-end call ended without a result"))

    def _serve_alone(self, request: _Request) -> None:
        self.batches_run += 1
        try:
            request.set_result(self.inner.generate(request.prompts, request.config, **request.overrides))
        except BaseException as exc:
            request.set_exception(exc)
            if not isinstance(exc, Exception):
                raise

    def _serve_group(self, group: list[tuple[_Request, list[str], list[SamplingConfig]]]) -> None:
        prompts = [p for _, ps, _ in group for p in ps]
        configs = [c for _, _, cs in group for c in cs]
        self.batches_run += 1
        try:
            outputs = self.inner.generate(prompts, configs)
        except Exception as exc:
            if len(group) == 1:
                group[0][0].set_exception(exc)
                return
            # Someone's input was bad (e.g. a prompt too long): run each request alone so that only its owner
            # sees the error.
            for request, ps, cs in group:
                self.batches_run += 1
                try:
                    request.set_result(self.inner.generate(ps, cs))
                except Exception as exc:
                    request.set_exception(exc)
            return
        at = 0
        for request, ps, _ in group:
            request.set_result(outputs[at : at + len(ps)])
            at += len(ps)

    def _last_token_vectors(self, sequences: list[list[int]], layer: int, source: HiddenSource) -> np.ndarray:
        with self._cond:
            while self._busy:
                self._cond.wait()
            self._busy = True
        try:
            return self.inner.last_token_vectors(sequences, layer=layer, source=source)
        finally:
            with self._cond:
                self._busy = False
                self._cond.notify_all()

    def close(self) -> None:
        """Close the inner back-end (it is shared: only do this when every user is done)."""
        self.inner.close()


_proxies: weakref.WeakValueDictionary[int, ConcurrentBackend] = weakref.WeakValueDictionary()
_proxies_lock = threading.Lock()


def concurrent_backend(backend: SelfAwareBackend) -> ConcurrentBackend:
    """The one ``ConcurrentBackend`` of ``backend`` in this process (``backend`` itself if it already is one), so
    that an LLM, a retriever gate, a re-ranker and a workflow over the same model all take turns on one lock."""
    if isinstance(backend, ConcurrentBackend):
        return backend
    if not isinstance(backend, SelfAwareBackend):
        raise TypeError(f"expected a SelfAwareBackend, got {type(backend).__name__}")
    with _proxies_lock:
        proxy = _proxies.get(id(backend))
        if proxy is None or proxy.inner is not backend:
            proxy = ConcurrentBackend(backend)
            _proxies[id(backend)] = proxy
        return proxy
