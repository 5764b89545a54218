"""The base of back-ends that wrap another one (thread-safe sharing, output memory): a wrapper changes how
``generate`` is served, never the model, so every other attribute reads through to the wrapped back-end."""

from __future__ import annotations

from typing import Any

import numpy as np

from seakr_integrations.backends.base import SelfAwareBackend
from seakr_integrations.outputs import SelfAwareOutput
from seakr_integrations.params import HiddenSource, SamplingConfig


class ProxyBackend(SelfAwareBackend):
    """A ``SelfAwareBackend`` view of ``inner``; subclasses override ``generate`` (and what else they change)."""

    def __init__(self, inner: SelfAwareBackend) -> None:
        if not isinstance(inner, SelfAwareBackend):
            raise TypeError(f"{type(self).__name__} wraps a SelfAwareBackend, got {type(inner).__name__}")
        self.inner = inner

    def __getattr__(self, name: str) -> Any:
        # Only reached for names not found on the proxy: the model's own attributes.
        if name == "inner":
            raise AttributeError(name)
        return getattr(self.inner, name)

    @property
    def supports_logits(self) -> bool:  # type: ignore[override]
        return self.inner.supports_logits

    @property
    def reads_hidden_states(self) -> bool:  # type: ignore[override]
        return self.inner.reads_hidden_states

    @property
    def dtype(self) -> str | None:  # type: ignore[override]
        return self.inner.dtype

    @property
    def last_timings(self) -> dict[str, float]:  # type: ignore[override]
        return self.inner.last_timings

    def tokenize(self, text: str) -> list[int]:
        return self.inner.tokenize(text)

    def chat_prompt(self, user_message: str) -> str:
        return self.inner.chat_prompt(user_message)

    def _generate(
        self, prompts: list[str], prompt_ids: list[list[int]], configs: list[SamplingConfig], layer: int
    ) -> list[SelfAwareOutput]:  # pragma: no cover - subclasses override generate, which never reaches this
        return self.generate(prompts, configs, layer=layer)

    def _last_token_vectors(self, sequences: list[list[int]], layer: int, source: HiddenSource) -> np.ndarray:
        return self.inner.last_token_vectors(sequences, layer=layer, source=source)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.inner!r})"
