"""Evaluation methods: SeaKR, its ablations, and baselines, behind one small interface, on the same back-end, prompts
and retriever so that ``seakr eval`` compares them row by row.  An ablation (the paper's Table 3) is a setting of
the one loop (:class:`SeaKRConfig`), not a copy of it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from seakr_integrations.evaluation.interface import Method, MethodAnswer
from seakr_integrations.evaluation.skr import WITH, WITHOUT, SKRkNN, skr_labels
from seakr_integrations.reasoning.answer import extract_answer
from seakr_integrations.reasoning.baselines import BASELINES, FLARE_THRESHOLD
from seakr_integrations.reasoning.config import PAPER_RULES, SeaKRConfig
from seakr_integrations.reasoning.reasoner import Reasoner, SeaKR
from seakr_integrations.reasoning.trace import SeaKRResult
from seakr_integrations.uncertainty.estimate import estimate
from seakr_integrations.uncertainty.registry import GENERATE_PROVIDES, REGISTRY, estimator_names, estimators_for


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


_SEAKR_VARIANTS: dict[str, tuple[dict[str, Any], str]] = {
    "seakr": ({}, "SeaKR with the library's default decision rules (SeaKRConfig(); docs/decision_rules.md)"),
    "seakr-paper": (dict(PAPER_RULES), "SeaKR with the authors' decision rules exactly (SeaKRConfig.paper())"),
    "seakr-both-finals": (
        {"final_strategy": "choose", "final_samples": "always", "final_estimator": None, "answer_when_stated": False},
        "the default SeaKR with the paper's final step: both final answers generated, each with its samples, the "
        "less uncertain by EigenScore given (its traces replay any final-answer rule)",
    ),
    "seakr-no-cascade": (
        {"cascade_estimator": None},
        "ablation of the default SeaKR: every step that the claim checks leave open is sampled (no cascade)",
    ),
    "seakr-no-options": (
        {"answer_with_option": False},
        "ablation of the default SeaKR: an answer that names neither option a question offers is given as it is",
    ),
    "seakr-bridges": (
        {"cover_bridge_entities": True},
        "the default SeaKR that also searches for each bridge entity a kept passage links the question to",
    ),
    # The paper's ablations (its Table 3) change the authors' SeaKR, so they keep its rules.
    "seakr-always-retrieve": (
        {**PAPER_RULES, "retrieve": "always"},
        "ablation of seakr-paper: no self-aware retrieval (retrieve at every step)",
    ),
    "seakr-no-rerank": (
        {**PAPER_RULES, "rerank": False},
        "ablation of seakr-paper: no self-aware re-ranking (the search engine's first)",
    ),
    "seakr-always-retrieve-no-rerank": (
        {**PAPER_RULES, "retrieve": "always", "rerank": False},
        "ablation of seakr-paper: neither (retrieve at every step, keep the search engine's first): isolates the "
        "re-ranking when the gate rarely opens",
    ),
    "seakr-rationales-only": (
        {**PAPER_RULES, "final_strategy": "rationales"},
        "ablation of seakr-paper: final answer from the rationales only",
    ),
    "seakr-knowledge-only": (
        {**PAPER_RULES, "final_strategy": "knowledge"},
        "ablation of seakr-paper: final answer from the passages only",
    ),
    **{
        f"seakr-{name.replace('_', '-')}": (
            {**PAPER_RULES, "estimator": name},
            f"ablation of seakr-paper: {name} in place of EigenScore",
        )
        for name in estimator_names()
        if name != "eigenscore"
    },
}

MethodFactory = Callable[..., Method]
"""``factory(backend, retriever, config, **options) -> Method``."""


def _closed_book(backend: Any, retriever: Any, config: SeaKRConfig, **_: Any) -> Method:
    return ClosedBookMethod(
        SeaKR(backend, retriever, config.with_(mode="single_hop", exemplar_style="simple", retrieve="never"))
    )


def _method(name: str, changes: dict[str, Any] | None = None) -> MethodFactory:
    def factory(backend: Any, retriever: Any, config: SeaKRConfig, **_: Any) -> Method:
        if changes is None:
            return SeaKRMethod(name, BASELINES[name](backend, retriever, config))  # greedy calls only: k is unused
        return SeaKRMethod(name, SeaKR(backend, retriever, config.with_(**changes)))

    return factory


_BASELINE_TEXT = {
    "cot": "baseline: chain of thought without retrieval",
    "single-retrieval": "baseline: retrieve once with the question, then chain of thought",
    "ircot": "baseline: IRCoT, retrieve with the question and after every reasoning sentence",
    "flare": f"baseline: FLARE, retrieve when a token's probability is below {FLARE_THRESHOLD}, masked query",
}


def _skr_knn(
    backend: Any, retriever: Any, config: SeaKRConfig, *, skr_train: Any = None, skr_k: int = 10, embed: Any = None
) -> Method:
    if skr_train is None:
        raise ValueError(
            "skr-knn needs training labels: run `seakr eval --method cot --method single-retrieval` on a training "
            "split, then pass that results directory as --skr-train DIR"
        )
    if embed is None:
        from seakr_integrations.embeddings import shared_embedder

        embed = shared_embedder().embed
    without = _method(WITHOUT)(backend, retriever, config)
    with_ = _method(WITH)(backend, retriever, config)
    return SKRkNN(without, with_, skr_labels(skr_train), embed, k=skr_k)


METHODS: dict[str, tuple[MethodFactory, str]] = {
    **{name: (_method(name, changes), description) for name, (changes, description) in _SEAKR_VARIANTS.items()},
    "closed-book": (_closed_book, "the direct answer without retrieval, scored by every estimator (for AUROC)"),
    **{name: (_method(name), text) for name, text in _BASELINE_TEXT.items()},
    "skr-knn": (
        _skr_knn,
        "baseline: SKR-kNN, CoT or single retrieval by the vote of the nearest labelled training questions "
        "(needs skr_train: a directory with cot.jsonl and single-retrieval.jsonl results)",
    ),
}
"""Method name -> (factory(backend, retriever, base_config), one-line description)."""


def method_settings(name: str) -> dict[str, Any]:
    """The SeaKR settings a method changes (an ablation's ``estimator``, ``retrieve``...); ``{}`` for the others."""
    check_method(name)
    return dict(_SEAKR_VARIANTS.get(name, ({}, ""))[0])


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
    keep all but ``k``).  ``options`` are the method's own: ``skr_train`` (a results directory) and ``skr_k``
    (neighbours, default 10) for ``skr-knn``.

    Raises:
        ValueError: Unknown method (the message lists the known ones), or a missing option.
    """
    check_method(name)
    return METHODS[name][0](backend, retriever, config or SeaKRConfig(), **options)
