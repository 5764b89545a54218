"""What the two LangChain apps share: the questions they ask, SeaKR's judge on the server, and a callback that keeps
SeaKR's decisions as a tracer would."""

from __future__ import annotations

from typing import Any

from langchain_core.callbacks import BaseCallbackHandler

from langchain_seakr import ChatSeaKR
from seakr_integrations import SeaKRConfig

QUESTIONS = {
    "known": "How many legs does a spider have?",
    "multi-hop": "The author of Sexual Politics attended which British University?",  # gold: Oxford
}


class Decisions(BaseCallbackHandler):
    """Keeps SeaKR's custom events (``seakr_gate_decided``, ``seakr_passages_reranked``...), as a tracer would."""

    def __init__(self) -> None:
        self.events: list[tuple[str, dict[str, Any]]] = []

    def on_custom_event(self, name: str, data: Any, **kwargs: Any) -> None:
        if name.startswith("seakr_"):
            self.events.append((name, data))


def judge(url: str, api_key: str | None, config: SeaKRConfig | None) -> tuple[ChatSeaKR, SeaKRConfig]:
    """SeaKR's self-aware model on the server at ``url``, sampling as ``config`` says (default the CPU preset)."""
    config = config or SeaKRConfig.light()
    return ChatSeaKR(base_url=url, api_key=api_key, k=config.k, max_tokens=config.max_tokens), config
