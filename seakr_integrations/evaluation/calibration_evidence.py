"""What a calibration measured on its questions, handed to every rule that learns (``Rule.learn``): one record for
all of them, so that a rule with learned state needs no code in ``calibrate_delta``, no profile field and no option
of its own.

A rule's learning reads what it needs; what costs calls (the baselines that label each question, the hidden states)
is measured the first time a rule or the verdict asks, once.  Before its first LM call a calibration hands every rule
the record unmeasured (:func:`check_learning`): a rule's own checks of what it needs (questions enough, a back-end
that reads hidden states) refuse there, and its first read of a measurement ends it (:class:`NotMeasured`), so no
rule's learning fails only after the sweep's calls are spent.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from seakr_integrations.backends.base import eos_scoring_sequence
from seakr_integrations.evaluation.gate_check import baseline_f1
from seakr_integrations.reasoning.calls import DEFAULT_SEARCH_TIMEOUT
from seakr_integrations.uncertainty.estimate import estimate

if TYPE_CHECKING:
    from seakr_integrations.backends.base import SelfAwareBackend
    from seakr_integrations.evaluation.questions import Question
    from seakr_integrations.outputs import SelfAwareOutput
    from seakr_integrations.reasoning.config import SeaKRConfig
    from seakr_integrations.reasoning.rules import Rule

__all__ = ["CalibrationEvidence", "NotMeasured", "check_learning"]


class NotMeasured(Exception):  # noqa: N818 - a signal of the planning pass, not an error
    """A measurement read before the calibration took it: :func:`check_learning` ends a rule's learning with it."""


class CalibrationEvidence:
    """A calibration's questions and settings, and, once the sweep has chosen delta (:meth:`record`), what it
    measured on each question.

    Attributes:
        backend: The back-end calibrated (``None`` in a check made before it is built: a rule skips what needs it).
        retriever: The search engine the baselines search with (``None`` in such a check).
        config: The calibrated ``SeaKRConfig`` (its ``layer`` and ``source`` are where hidden states are read).
        questions: The labelled calibration questions.
        target_rate: The retrieval rate asked for (``None``: none), e.g. for a threshold set at that rate.
        dataset: The question file's name, for a learned state to record.
    """

    def __init__(
        self,
        backend: SelfAwareBackend | None,
        retriever: Any,
        config: SeaKRConfig,
        questions: Sequence[Question],
        *,
        target_rate: float | None = None,
        dataset: str = "",
        search_timeout: float | None = DEFAULT_SEARCH_TIMEOUT,
    ) -> None:
        self.backend = backend
        self.retriever = retriever
        self.config = config
        self.questions = list(questions)
        self.target_rate = target_rate
        self.dataset = dataset
        self._search_timeout = search_timeout
        self._first: tuple[list[SelfAwareOutput], list[float], float] | None = None
        self._labels: tuple[list[float], list[float]] | None = None
        self._vectors: np.ndarray | None = None

    def record(self, outputs: Sequence[SelfAwareOutput], uncertainties: Sequence[float], delta: float) -> None:
        """Take the sweep's measurements: each question's first step, its uncertainty and the delta chosen."""
        self._first = (list(outputs), [float(u) for u in uncertainties], float(delta))

    @property
    def measured(self) -> bool:
        """Whether the sweep's measurements are recorded (``False`` in :func:`check_learning`'s pass)."""
        return self._first is not None

    def _measurements(self) -> tuple[list[SelfAwareOutput], list[float], float]:
        if self._first is None:
            raise NotMeasured("the calibration has not measured its questions yet")
        return self._first

    @property
    def outputs(self) -> list[SelfAwareOutput]:
        """Each question's first step as the gate measured it: the greedy continuation and the k samples."""
        return self._measurements()[0]

    @property
    def uncertainties(self) -> list[float]:
        """The gate's uncertainty (the config's estimator) of each question's first step; ``inf``: an empty step."""
        return self._measurements()[1]

    @property
    def delta(self) -> float:
        """The delta the sweep chose: the gate retrieves where the uncertainty is above it."""
        return self._measurements()[2]

    def readings(self, estimator: str) -> list[float]:
        """Another estimator's reading of each first step, from the same outputs (no call: a greedy-only one)."""
        return [estimate(output, estimator).value for output in self.outputs]

    def labels(self) -> tuple[list[float], list[float]]:
        """Each question's F1 closed-book (chain of thought) and with one retrieval, with the config's prompt: what
        "retrieval helps" is judged by (``gate_check.baseline_f1``: about three LM calls and a search a question,
        made the first time they are asked for)."""
        self._measurements()
        if self._labels is None:
            self._labels = baseline_f1(
                self.backend, self.retriever, self.config, self.questions, search_timeout=self._search_timeout
            )
        return self._labels

    @property
    def layer(self) -> int:
        """The decoder layer :meth:`state_vectors` reads (the config's, or the back-end's default)."""
        if self.backend is None:
            raise NotMeasured("the back-end is not built yet")
        return self.backend.resolve_layer(self.config.layer)

    def state_vectors(self) -> np.ndarray:
        """The hidden state at EOS after each first step's greedy continuation, ``(questions, width)``, at
        :attr:`layer` and the config's source: what a state probe reads (one scoring pass, made the first time)."""
        outputs = self.outputs
        if self._vectors is None:
            backend = self.backend
            sequences = [eos_scoring_sequence(o.prompt_token_ids, o.greedy.token_ids, backend.eos_token_id)
                         for o in outputs]  # fmt: skip
            self._vectors = backend.last_token_vectors(sequences, layer=self.layer, source=self.config.source)
        return self._vectors


def check_learning(rules: Iterable[Rule], evidence: CalibrationEvidence) -> None:
    """Run each rule's learning on ``evidence`` before anything is measured: what a rule checks before it reads a
    measurement (too few questions, a back-end that reads no hidden states, a parameter out of range) is refused
    now, before any LM call; its first read of a measurement ends it.

    Raises:
        ValueError: What a rule's learning refused, in its words.
    """
    if evidence.measured:
        raise RuntimeError("check_learning takes the evidence before the calibration measures it")
    for rule in rules:
        try:
            rule.learn(evidence)
        except NotMeasured:
            continue
