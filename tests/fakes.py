"""Scripted test doubles for the reasoning loop: a back-end whose answers and uncertainty a test dictates, and a
retriever that records its queries.  For unit-testing logic only; the real models are tested elsewhere."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import SimpleNamespace

import numpy as np

from seakr_integrations.backends.base import SelfAwareBackend
from seakr_integrations.outputs import Continuation, SelfAwareOutput
from seakr_integrations.params import SamplingConfig
from seakr_integrations.retrieval.passage import Passage

__all__ = ["CharTokenizer", "FakeRetriever", "Reply", "ScriptedBackend", "passage"]

EOS = 0
_NOISE = np.random.default_rng(0).normal(size=(64, 16))


class CharTokenizer:
    """One token per character: makes token/word alignment in the query builder easy to predict."""

    chat_template = None

    def __call__(self, text: str, add_special_tokens: bool = True) -> SimpleNamespace:
        return SimpleNamespace(input_ids=[ord(c) for c in text])

    def decode(self, ids: Sequence[int], skip_special_tokens: bool = True) -> str:
        return "".join(chr(i) for i in ids if i != EOS)


@dataclass
class Reply:
    """What the fake model says for one prompt.

    Attributes:
        text: The greedy text.
        spread: Scale of the samples' EOS vectors around zero: 0 = all identical (U = ln(alpha), most certain),
            larger = more uncertain (U grows monotonically with it).
        low: Words of ``text`` generated with probability 0.5 (all other tokens have probability 1).
        sample_text: Text of the samples (``""`` makes every sample empty).
        state: The greedy continuation's vector at EOS, returned when a call asks for it (``greedy_vector``;
            default: zeros).
    """

    text: str
    spread: float = 0.0
    low: tuple[str, ...] = ()
    sample_text: str | None = None
    state: tuple[float, ...] | None = None


class ScriptedBackend(SelfAwareBackend):
    """A back-end whose reply to each prompt is ``respond(prompt, config)``; it records every batch it gets."""

    def __init__(
        self,
        respond: Callable[[str, SamplingConfig], Reply],
        max_context: int = 1_000_000,
        scoring: Callable[[list[int]], np.ndarray] | None = None,
    ) -> None:
        self.respond = respond
        self.scoring = scoring
        """The stand-alone scoring pass (``last_token_vectors``) for a test that needs one; ``None``: refused."""
        self.model_name = "scripted"
        self.num_layers = 4
        self.hidden_size = 16
        self.max_context = max_context
        self.eos_token_id = EOS
        self.tokenizer = CharTokenizer()
        self.batches: list[list[tuple[str, SamplingConfig]]] = []
        self.outputs: list[SelfAwareOutput] = []

    @property
    def prompts(self) -> list[str]:
        return [p for batch in self.batches for p, _ in batch]

    def _generate(
        self, prompts: list[str], prompt_ids: list[list[int]], configs: list[SamplingConfig], layer: int
    ) -> list[SelfAwareOutput]:
        self.batches.append(list(zip(prompts, configs, strict=True)))
        outputs = []
        for prompt, ids, config in zip(prompts, prompt_ids, configs, strict=True):
            reply = self.respond(prompt, config)
            logprobs = [0.0] * len(reply.text)
            for word in reply.low:
                at = reply.text.find(word)
                assert at >= 0, f"low-confidence word {word!r} not in {reply.text!r}"
                logprobs[at : at + len(word)] = [math.log(0.5)] * len(word)
            greedy = Continuation(reply.text, [ord(c) for c in reply.text] + [EOS], [*logprobs, 0.0], "stop")
            text = reply.text if reply.sample_text is None else reply.sample_text
            samples = [
                Continuation(text, [ord(c) for c in text] + [EOS], [0.0] * (len(text) + 1), "stop")
                for _ in range(config.k)
            ]
            for i, s in enumerate(samples):
                s.eos_vector = (_NOISE[i] * reply.spread).astype(np.float32)
            if config.greedy_vector:
                state = reply.state if reply.state is not None else (0.0,) * self.hidden_size
                greedy.eos_vector = np.asarray(state, dtype=np.float32)
            outputs.append(SelfAwareOutput(prompt, ids, greedy, samples, layer, config.source))
        self.outputs.extend(outputs)
        return outputs

    def _last_token_vectors(self, sequences: list[list[int]], layer: int, source: str) -> np.ndarray:
        if self.scoring is None:
            raise AssertionError("the reasoning loop must not need the stand-alone scoring pass")
        return np.stack([self.scoring(s) for s in sequences]).astype(np.float32)


def passage(pid: str, text: str | None = None, title: str = "") -> Passage:
    return Passage(pid, title or pid, text or f"text of {pid}", 1.0)


class FakeRetriever:
    """Returns ``results[query]`` (or ``default``) and records the queries; ``error`` makes it raise."""

    def __init__(
        self,
        results: dict[str, list[Passage]] | None = None,
        default: list[Passage] | Callable[[str], list[Passage]] = (),
        error: Exception | None = None,
    ) -> None:
        self.results = results or {}
        self.default = default
        self.error = error
        self.queries: list[tuple[str, int]] = []

    def search(self, query: str, k: int = 3) -> list[Passage]:
        self.queries.append((query, k))
        if self.error is not None:
            raise self.error
        if query in self.results:
            return self.results[query][:k]
        found = self.default(query) if callable(self.default) else list(self.default)
        return found[:k]
