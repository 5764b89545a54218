"""The scripted world of the LlamaIndex adapter tests: the Eiffel Tower question, a script whose uncertainty the
tests can predict, a LlamaIndex retriever of fixed nodes, and an event-loop ticker for the async tests.

The scripted back-end's uncertainty is real EigenScore over vectors whose spread the script sets (spread 0: about
-6.9, below the paper's delta -6.0, "certain"; spread >= 0.1: far above it), so every decision is predictable.
"""

from __future__ import annotations

import asyncio
import re
import time

from fakes import Reply, ScriptedBackend
from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.instrumentation.event_handlers import BaseEventHandler
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

from llamaindex_seakr import SeaKRLLM
from seakr_integrations.calibration import PAPER_DELTA
from seakr_integrations.params import SamplingConfig
from seakr_integrations.reasoning import SeaKRConfig

CONFIG = SeaKRConfig.paper(k=4, num_exemplars=0, max_tokens=10, delta=PAPER_DELTA)  # the authors' decisions (parity)
QUESTION = "Which country is the Eiffel Tower in?"
SPREADS = {"text of p1": 0.5, "text of p2": 0.2, "text of p3": 0.8}


def parse(prompt: str) -> tuple[str, list[str], str]:
    """(question, context passages, answer so far) of a prompt built without exemplars or chat template."""
    head, _, answer = prompt.rpartition("\nAnswer:")
    return head.rsplit("Question: ", 1)[1], re.findall(r"\[\d+\] (.*)\n", head), answer.strip()


def is_step(config: SamplingConfig) -> bool:
    return ". " in config.stop


def eiffel(prompt: str, config: SamplingConfig) -> Reply:
    """Uncertain first step; p2 leaves the least uncertain next step; then the answer."""
    if "Question: " not in prompt:  # a plain completion (SeaKRLLM.complete, response synthesis)
        return Reply("Plain completion.", spread=0.3)
    _, context, answer = parse(prompt)
    if not is_step(config):
        return Reply("So the answer is France", 0.0)
    if not context:
        return Reply("The Eiffel Tower stands in Germany", spread=1.0, low=("Germany",))
    if not answer:
        return Reply("It is in France", spread=SPREADS.get(context[-1], 0.7))
    return Reply("So the answer is France", spread=1.0)


def slow(respond, seconds: float):
    def respond_slowly(prompt: str, config: SamplingConfig) -> Reply:
        time.sleep(seconds)
        return respond(prompt, config)

    return respond_slowly


def make_nodes() -> list[NodeWithScore]:
    return [
        NodeWithScore(
            node=TextNode(id_=f"p{i}", text=f"text of p{i}", metadata={"title": f"Page {i}", "source": "wiki"}),
            score=1.0 / i,
        )
        for i in (1, 2, 3)
    ]


class NodeListRetriever(BaseRetriever):
    """A LlamaIndex retriever returning the same nodes for every query (its own objects, as a docstore would)."""

    def __init__(self, nodes: list[NodeWithScore] | None = None, error: Exception | None = None) -> None:
        super().__init__()
        self.nodes = make_nodes() if nodes is None else nodes
        self.error = error
        self.queries: list[str] = []

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        self.queries.append(query_bundle.query_str)
        if self.error is not None:
            raise self.error
        return list(self.nodes)


class Capture(BaseEventHandler):
    events: list = []

    @classmethod
    def class_name(cls) -> str:
        return "Capture"

    def handle(self, event, **kwargs) -> None:
        self.events.append(event)


def llm_for(respond=eiffel, **kwargs) -> SeaKRLLM:
    return SeaKRLLM(backend=ScriptedBackend(respond), k=4, max_tokens=10, **kwargs)


class Ticker:
    """Counts event-loop turns while a coroutine runs: a blocked loop does not tick."""

    def __init__(self) -> None:
        self.ticks = 0
        self.running = True

    async def run(self) -> None:
        while self.running:
            self.ticks += 1
            await asyncio.sleep(0.01)


async def ticking(coro):
    ticker = Ticker()
    task = asyncio.create_task(ticker.run())
    try:
        result = await coro
    finally:
        ticker.running = False
        await task
    return result, ticker.ticks
