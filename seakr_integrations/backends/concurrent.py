"""One self-aware back-end shared safely by threads: concurrent ``generate`` calls are queued and run as one batch.
Framework async paths run model calls in threads, and no back-end may be entered twice (docs/design/backends.md).
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Sequence
from typing import Any

import numpy as np

from seakr_integrations.backends.base import SelfAwareBackend
from seakr_integrations.backends.proxy import ProxyBackend
from seakr_integrations.outputs import SelfAwareOutput
from seakr_integrations.params import HiddenSource, SamplingConfig


class _Request:
    """One caller's ``generate`` call waiting in the queue."""

    def __init__(self, prompts: Any, config: Any, overrides: dict[str, Any]) -> None:
        self.prompts, self.config, self.overrides = prompts, config, overrides
        self.done = False
        self.outputs: list[SelfAwareOutput] | None = None
        self.error: BaseException | None = None

    def finish(self, outputs: list[SelfAwareOutput] | None = None, error: BaseException | None = None) -> None:
        self.outputs, self.error, self.done = outputs, error, True

    def result(self) -> list[SelfAwareOutput]:
        if self.error is not None:
            raise self.error
        return self.outputs  # type: ignore[return-value]


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
            while not request.done and self._busy:
                self._cond.wait()
            if request.done:
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
            merged: list[tuple[_Request, list[str], list[SamplingConfig]]] = []
            for request in batch:
                try:
                    prompts, configs = self._normalise(request)
                except Exception as exc:  # a bad request fails alone, as it would have without company
                    request.finish(error=exc)
                    continue
                merged.append((request, prompts, configs))
            groups: dict[tuple[Any, str], list[tuple[_Request, list[str], list[SamplingConfig]]]] = {}
            for item in merged:  # one back-end call reads one (layer, source)
                groups.setdefault((item[2][0].layer, item[2][0].source), []).append(item)
            for group in groups.values():
                self._serve_group(group)
        finally:
            for request in batch:
                if not request.done:
                    request.finish(error=RuntimeError("the shared back-end call ended without a result"))

    def _serve_alone(self, request: _Request) -> None:
        self.batches_run += 1
        try:
            request.finish(self.inner.generate(request.prompts, request.config, **request.overrides))
        except BaseException as exc:
            request.finish(error=exc)
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
                group[0][0].finish(error=exc)
                return
            # Someone's input was bad (e.g. a prompt too long): run each request alone so that only its owner
            # sees the error.
            for request, ps, cs in group:
                self.batches_run += 1
                try:
                    request.finish(self.inner.generate(ps, cs))
                except Exception as exc:
                    request.finish(error=exc)
            return
        at = 0
        for request, ps, _ in group:
            request.finish(outputs[at : at + len(ps)])
            at += len(ps)

    @staticmethod
    def _normalise(request: _Request) -> tuple[list[str], list[SamplingConfig]]:
        """The request's prompts with one ``SamplingConfig`` each (overrides applied), validated as ``generate``
        would, so it can join a merged call."""
        prompts = SelfAwareBackend._checked_prompts(request.prompts)
        configs = SelfAwareBackend._per_prompt_configs(request.config, len(prompts), request.overrides)
        return prompts, configs

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
