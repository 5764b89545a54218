"""Evaluation methods: SeaKR and the baselines, behind one small interface, on the same back-end, prompts and
retriever so that ``seakr eval`` compares them row by row.  SeaKR runs whatever its config says: an ablation (the
paper's Table 3) or another set of rules is a setting of the one loop (``--rules``, ``--retrieve``,
``--final-strategy``, ``--estimator``), not another method.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from seakr_integrations.evaluation.interface import Method, MethodAnswer
from seakr_integrations.evaluation.skr import SKRkNN, skr_labels
from seakr_integrations.evaluation.token_gate import TokenGateFit, fit_token_gate
from seakr_integrations.evaluation.training import WITH, WITHOUT
from seakr_integrations.reasoning.answer import extract_answer
from seakr_integrations.reasoning.baselines import BASELINES, FLARE_THRESHOLD, TokenGate
from seakr_integrations.reasoning.config import SeaKRConfig
from seakr_integrations.reasoning.reasoner import Reasoner, SeaKR
from seakr_integrations.reasoning.trace import SeaKRResult
from seakr_integrations.uncertainty.estimate import estimate
from seakr_integrations.uncertainty.registry import GENERATE_PROVIDES, REGISTRY, estimators_for


class SeaKRMethod:
    """SeaKR (or one of its ablations, or a baseline) as an evaluation method."""

    def __init__(self, name: str, seakr: Reasoner) -> None:
        self.name = name
        self.seakr = seakr

    def describe(self) -> dict[str, Any]:
        return {"method": self.name, "seakr": self.seakr.config.to_dict()}

    def answer_many(self, questions: Sequence[str]) -> list[MethodAnswer]:
        """Answers in order; a question that failed gets an answer with its ``error`` (the others are kept)."""
        return [_answer(r) for r in self.seakr.answer_many(list(questions), return_exceptions=True)]

    def iter_answers(self, questions: Sequence[str], max_in_flight: int) -> Iterator[tuple[int, MethodAnswer]]:
        """``(index, answer)`` as each question finishes; a new one starts as soon as one is done."""
        for i, result in self.seakr.iter_answers(list(questions), max_in_flight=max_in_flight):
            yield i, _answer(result)


class ClosedBookMethod(SeaKRMethod):
    """The model's direct answer without retrieval, with every estimator's uncertainty of it (for AUROC).

    One self-aware call per question in SeaKR's single-hop prompt, then the prompt estimator's probe; the answer is
    " So the answer is" when stated, else the first line.  ``energy`` is scored only on back-ends with raw logits.
    """

    seakr: SeaKR

    def __init__(self, seakr: SeaKR) -> None:
        super().__init__("closed-book", seakr)

    def iter_answers(self, questions: Sequence[str], max_in_flight: int) -> Iterator[tuple[int, MethodAnswer]]:
        """One batched call per ``max_in_flight`` questions: closed-book answers have no loop to stream."""
        for start in range(0, len(questions), max_in_flight):
            yield from enumerate(self.answer_many(questions[start : start + max_in_flight]), start)

    def answer_many(self, questions: Sequence[str]) -> list[MethodAnswer]:
        cfg = self.seakr.config
        answers = []
        assessed = list(self.seakr.assess_many(list(questions)))
        if "probe" in REGISTRY[cfg.estimator].needs:  # the loop has probed already
            probed = [a.uncertainty for a in assessed]
        else:
            probed = self.seakr.probe_uncertainties([a.output.prompt for a in assessed], [a.output for a in assessed])
        for a, probe in zip(assessed, probed, strict=True):
            provides = GENERATE_PROVIDES if a.output.greedy.logit_lse is not None else GENERATE_PROVIDES - {"logits"}
            if not self.seakr.backend.reads_hidden_states:  # a plain server: logprobs only
                provides = provides - {"vectors"}
            scores = {name: estimate(a.output, name, cfg.alpha).value for name in estimators_for(provides)}
            scores[probe.estimator] = probe.value
            scores = {name: value if math.isfinite(value) else None for name, value in scores.items()}
            prediction = extract_answer(a.generation) or a.generation.strip().split("\n")[0]
            trace = {"generation": a.generation, "uncertainty": scores, "samples": [s.text for s in a.output.samples]}
            answers.append(MethodAnswer(prediction, 0, 2, a.output.generated_tokens(), trace))
        return answers


def _answer(result: SeaKRResult | Exception) -> MethodAnswer:
    if isinstance(result, Exception):
        return MethodAnswer("", 0, 0, 0, error=f"{type(result).__name__}: {result}", exception=result)
    return MethodAnswer(result.answer, result.searches, result.lm_calls, result.generated_tokens, result.to_dict())


MethodFactory = Callable[..., Method]
"""``factory(backend, retriever, config, **options) -> Method``."""


def _closed_book(backend: Any, retriever: Any, config: SeaKRConfig, **options: Any) -> Method:
    single = config.with_(mode="single_hop", exemplar_style="simple", retrieve="never")
    return ClosedBookMethod(SeaKR(backend, retriever, single, **_search(options)))


def _search(options: dict[str, Any]) -> dict[str, Any]:
    """The search settings among a factory's options (``search_timeout``, ``on_retrieval_error``)."""
    return {k: options[k] for k in ("search_timeout", "on_retrieval_error") if k in options}


def _seakr(backend: Any, retriever: Any, config: SeaKRConfig, **options: Any) -> Method:
    return SeaKRMethod("seakr", SeaKR(backend, retriever, config, **_search(options)))


def _method(name: str) -> MethodFactory:
    def factory(backend: Any, retriever: Any, config: SeaKRConfig, **options: Any) -> Method:
        reasoner = BASELINES[name](backend, retriever, config, **_search(options))  # greedy calls only: k is unused
        return SeaKRMethod(name, reasoner)

    return factory


_BASELINE_TEXT = {
    "cot": "baseline: chain of thought without retrieval",
    "single-retrieval": "baseline: retrieve once with the question, then chain of thought",
    "ircot": "baseline: IRCoT, retrieve with the question and after every reasoning sentence",
    "flare": f"baseline: FLARE, retrieve when a token's probability is below {FLARE_THRESHOLD}, masked query",
}


def _token_gate(
    backend: Any, retriever: Any, config: SeaKRConfig, *, train_results: Any = None, **options: Any
) -> Method:
    if train_results is None:
        raise ValueError(
            "token-gate needs its threshold's training results: run `seakr eval --method cot --method "
            "single-retrieval` on a training split, then pass that results directory as --train-results DIR"
        )
    fit = fit_token_gate(train_results)
    gate = TokenGate(backend, retriever, config, **_search(options))
    gate.threshold = fit.threshold
    return TokenGateMethod(gate, fit)


class TokenGateMethod(SeaKRMethod):
    """The token gate as an evaluation method: its results files are keyed by its fitted threshold too."""

    def __init__(self, gate: TokenGate, fit: TokenGateFit) -> None:
        super().__init__(gate.name, gate)
        self.fit = fit

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "gate": self.fit.describe()}


def _skr_knn(
    backend: Any,
    retriever: Any,
    config: SeaKRConfig,
    *,
    train_results: Any = None,
    skr_k: int = 10,
    embed: Any = None,
    **options: Any,
) -> Method:
    if train_results is None:
        raise ValueError(
            "skr-knn needs training labels: run `seakr eval --method cot --method single-retrieval` on a training "
            "split, then pass that results directory as --train-results DIR"
        )
    if embed is None:
        from seakr_integrations.embeddings import shared_embedder

        embed = shared_embedder().embed
    without = _method(WITHOUT)(backend, retriever, config, **options)
    with_ = _method(WITH)(backend, retriever, config, **options)
    return SKRkNN(without, with_, skr_labels(train_results), embed, k=skr_k)


METHODS: dict[str, tuple[MethodFactory, str]] = {
    "seakr": (
        _seakr,
        "SeaKR with the given settings (by default SeaKRConfig(): the default rules; --rules paper: the authors')",
    ),
    "closed-book": (_closed_book, "the direct answer without retrieval, scored by every estimator (for AUROC)"),
    **{name: (_method(name), text) for name, text in _BASELINE_TEXT.items()},
    "skr-knn": (
        _skr_knn,
        "baseline: SKR-kNN, CoT or single retrieval by the vote of the nearest labelled training questions "
        "(needs train_results: a directory with cot.jsonl and single-retrieval.jsonl results)",
    ),
    "token-gate": (
        _token_gate,
        "baseline: one closed-book chain, and one retrieval when its greedy reading (1 - least token probability) "
        "is above a threshold fitted on training results (needs train_results, as skr-knn)",
    ),
}
"""Method name -> (factory(backend, retriever, base_config), one-line description)."""


def known_methods() -> list[str]:
    """The method names ``seakr eval --method`` accepts."""
    return list(METHODS)


def check_method(name: str) -> None:
    """Raise ``ValueError`` listing the known methods when ``name`` is not one (before anything is loaded)."""
    if name not in METHODS:
        listing = "\n".join(f"  {n}: {d}" for n, (_, d) in METHODS.items())
        raise ValueError(f"unknown method {name!r}; the known methods are:\n{listing}")


def make_method(name: str, backend: Any, retriever: Any, config: SeaKRConfig | None = None, **options: Any) -> Method:
    """Build the method ``name`` on the given back-end, retriever and base configuration (``config``; the baselines
    keep all but ``k``).  ``options``: ``search_timeout`` and ``on_retrieval_error`` (see ``Reasoner``); for
    ``skr-knn`` and ``token-gate`` ``train_results`` (a results directory), and for ``skr-knn`` ``skr_k``
    (neighbours, default 10).

    Raises:
        ValueError: Unknown method (the message lists the known ones), or a missing option.
    """
    check_method(name)
    return METHODS[name][0](backend, retriever, config or SeaKRConfig(), **options)
