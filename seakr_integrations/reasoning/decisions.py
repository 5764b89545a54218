"""SeaKR's three decisions as records, defined once: the gate, a candidate passage's score, the final choice.
Both adapters put their :meth:`to_metadata` on documents and nodes (conventions: ``docs/design/reasoning.md``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from seakr_integrations.reasoning.jsonform import number_from_json, number_to_json
from seakr_integrations.reasoning.reasons import Reason

if TYPE_CHECKING:
    from seakr_integrations.reasoning.records import Assessment, CandidateTrace, FinalTrace
    from seakr_integrations.reasoning.trace import SeaKRResult

GATE_METADATA_KEYS = ("seakr_gate_retrieve", "seakr_gate_reason", "seakr_gate_uncertainty", "seakr_gate_delta")
CANDIDATE_METADATA_KEYS = ("seakr_uncertainty", "seakr_search_rank", "seakr_chosen", "seakr_generation")
FINAL_METADATA_KEYS = ("seakr_final_strategy", "seakr_final_uncertainties")


def _metadata_number(value: float) -> float | None:
    return float(value) if math.isfinite(value) else None


class GateSettings(Protocol):
    """The settings :meth:`GateDecision.from_assessment` reads (``SeaKRConfig`` has them): a decision is a record
    below the configuration, so it names what it needs rather than the config type."""

    @property
    def delta(self) -> float | None: ...

    @property
    def retrieve(self) -> str: ...

    @property
    def mode(self) -> str: ...


class GateReason(Reason):
    """Why the gate retrieved or not (one meaning in the core and both adapters): a registered reason
    (``reasons.Reason``); a rule of a user's own registers its own with ``GateReason.register(value, doc,
    retrieves=...)``.

    Attributes:
        retrieves: Whether the gate retrieves for this reason.
    """

    retrieves: bool

    noun: ClassVar[str] = "gate reason"
    UNCERTAIN: ClassVar[GateReason]
    CONFIDENT: ClassVar[GateReason]
    EMPTY_GENERATION: ClassVar[GateReason]
    ALWAYS_RETRIEVE: ClassVar[GateReason]
    NEVER_RETRIEVE: ClassVar[GateReason]
    SURE_FROM_TOKENS: ClassVar[GateReason]
    UNSURE_FROM_TOKENS: ClassVar[GateReason]
    SURE_FROM_STATE: ClassVar[GateReason]
    UNSURE_FROM_STATE: ClassVar[GateReason]
    UNSUPPORTED_CLAIM: ClassVar[GateReason]
    SUPPORTED_CLAIM: ClassVar[GateReason]
    QUESTION_FIRST: ClassVar[GateReason]
    UNCOVERED_ENTITY: ClassVar[GateReason]


GateReason.UNCERTAIN = GateReason.register(
    "uncertain",
    "The uncertainty is above delta (single-hop: not below it): retrieve.",
    retrieves=True,
)
GateReason.CONFIDENT = GateReason.register(
    "confident",
    "The uncertainty is at most delta (single-hop: below it): no retrieval.",
    retrieves=False,
)
GateReason.EMPTY_GENERATION = GateReason.register(
    "empty_generation",
    "The model wrote nothing: retrieve whatever the uncertainty.",
    retrieves=True,
)
GateReason.ALWAYS_RETRIEVE = GateReason.register(
    "always_retrieve",
    "Told to retrieve whatever the uncertainty (the uncertainty is still measured and recorded).",
    retrieves=True,
)
GateReason.NEVER_RETRIEVE = GateReason.register(
    "never_retrieve",
    '``SeaKRConfig(retrieve="never")``: retrieval is off.',
    retrieves=False,
)
GateReason.SURE_FROM_TOKENS = GateReason.register(
    "sure_from_tokens",
    "The cascade: the greedy continuation's own token probabilities put the model clearly on the sure side (the "
    "``token-cascade`` rule's reading at or below its band's low edge), so no samples were drawn: no retrieval.",
    retrieves=False,
)
GateReason.UNSURE_FROM_TOKENS = GateReason.register(
    "unsure_from_tokens",
    "The cascade: the greedy continuation's token probabilities put the model clearly on the unsure side (above the "
    "band's high edge), so no samples were drawn: retrieve.",
    retrieves=True,
)
GateReason.SURE_FROM_STATE = GateReason.register(
    "sure_from_state",
    "The ``state-probe`` rule: a linear probe on the greedy step's hidden state puts the model on the sure side (at "
    "or below its band's low edge), so no samples were drawn: no retrieval.",
    retrieves=False,
)
GateReason.UNSURE_FROM_STATE = GateReason.register(
    "unsure_from_state",
    "The ``state-probe`` rule: the probe puts the model on the unsure side (above its band's high edge): retrieve.",
    retrieves=True,
)
GateReason.UNSUPPORTED_CLAIM = GateReason.register(
    "unsupported_claim",
    "The step names an entity that no kept passage backs (the ``claim-check`` rule: none is about it, or with "
    '``backing="mention"`` none mentions it): retrieve, whatever the uncertainty.',
    retrieves=True,
)
GateReason.SUPPORTED_CLAIM = GateReason.register(
    "supported_claim",
    "Every name the step states is covered by a kept passage (the ``accept-covered-steps`` rule): accepted without "
    "samples.",
    retrieves=False,
)
GateReason.QUESTION_FIRST = GateReason.register(
    "question_first",
    "Before its first step the loop searched the question itself and kept the results, as single retrieval does (the "
    "``search-question-first`` rule); the steps after it search for what those passages leave out.",
    retrieves=True,
)
GateReason.UNCOVERED_ENTITY = GateReason.register(
    "uncovered_entity",
    "The step states the answer, but an entity a rule says the answer needs (one the question compares, the ``cover-"
    "compared-entities`` rule) has no kept passage yet: search for it first.",
    retrieves=True,
)


@dataclass(frozen=True)
class GateDecision:
    """What SeaKR's self-aware retrieval gate decided for one query, and why.

    Attributes:
        query: The query (question) assessed.
        retrieve: Whether the wrapped retriever was (to be) called.
        reason: Why (see :class:`GateReason`; :attr:`explanation` says it in words).
        uncertainty: The model's uncertainty about what it wrote (``inf`` when it could not be measured).
        delta: The threshold it was compared with.
        generation: What the model wrote when assessed (its next step; single-hop: its direct answer).
        states_answer: Whether that generation already states an answer.
        single_hop: Whether the single-hop rule applied (retrieve when the uncertainty is not below delta).
        error: Why the search failed, when it did and the adapter went on without it
            (``on_retrieval_error="answer_without"``); ``None`` otherwise.
        documents: What the adapter returned: LangChain ``Document`` s or LlamaIndex ``NodeWithScore`` s (empty when
            the gate skipped retrieval).  Not part of :meth:`to_dict` or equality.
        assessment: The core's full uncertainty check (samples included), when at hand.
    """

    query: str
    retrieve: bool
    reason: GateReason
    uncertainty: float
    delta: float
    generation: str = ""
    states_answer: bool = False
    single_hop: bool = False
    error: str | None = None
    documents: Sequence[Any] = field(default=(), compare=False, repr=False)
    assessment: Assessment | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "reason", GateReason(self.reason))

    @classmethod
    def from_assessment(
        cls, assessment: Assessment, config: GateSettings, *, always_retrieve: bool = False
    ) -> GateDecision:
        """The decision for a core assessment (``SeaKR.assess``) under ``config``, the loop's resolved one
        (``SeaKR(...).config``; a ``delta`` of ``None`` is a ``ValueError``); ``always_retrieve`` overrides the gate
        as ``retrieve="always"`` does (the reason says so, the uncertainty stays recorded)."""
        if config.delta is None:
            raise ValueError(
                "config.delta is None: pass the loop's resolved config (SeaKR(...).config), whose delta comes from "
                "the calibration profile"
            )
        if always_retrieve or config.retrieve == "always":
            retrieve, reason = True, GateReason.ALWAYS_RETRIEVE
        elif config.retrieve == "never":
            retrieve, reason = False, GateReason.NEVER_RETRIEVE
        elif not assessment.generation.strip():
            retrieve, reason = True, GateReason.EMPTY_GENERATION
        elif assessment.reason is not None:
            retrieve, reason = assessment.retrieve, assessment.reason
        elif assessment.retrieve:
            retrieve, reason = True, GateReason.UNCERTAIN
        else:
            retrieve, reason = False, GateReason.CONFIDENT
        return cls(
            query=assessment.question,
            retrieve=retrieve,
            reason=reason,
            uncertainty=assessment.uncertainty.value,
            delta=float(config.delta),
            generation=assessment.generation,
            states_answer=assessment.states_answer,
            single_hop=config.mode == "single_hop",
            assessment=assessment,
        )

    def with_documents(self, documents: Sequence[Any], error: str | None = None) -> GateDecision:
        """This decision with the documents (nodes) the adapter returned, and the search's ``error`` when it failed
        and the adapter went on without it."""
        return replace(self, documents=list(documents), error=error)

    @property
    def explanation(self) -> str:
        """The reason in words, with the numbers compared."""
        u = f"{self.uncertainty:.4g}" if math.isfinite(self.uncertainty) else "inf"
        delta = f"{self.delta:g}"
        above, below = (">=", "<") if self.single_hop else (">", "<=")
        return {
            GateReason.UNCERTAIN: f"uncertainty {u} {above} delta {delta}: the model is unsure, so it retrieves",
            GateReason.CONFIDENT: f"uncertainty {u} {below} delta {delta}: the model is sure, so retrieval is skipped",
            GateReason.EMPTY_GENERATION: f"the model wrote nothing (uncertainty {u}), so it retrieves",
            GateReason.ALWAYS_RETRIEVE: f"told to always retrieve (uncertainty {u}, delta {delta})",
            GateReason.SURE_FROM_TOKENS: "the greedy step's token probabilities show the model clearly sure, so "
            "retrieval is skipped",
            GateReason.UNSURE_FROM_TOKENS: "the greedy step's token probabilities show the model clearly unsure, so "
            "it retrieves",
            GateReason.SURE_FROM_STATE: "a probe on the model's hidden state finds it sure, so retrieval is skipped",
            GateReason.UNSURE_FROM_STATE: "a probe on the model's hidden state finds it unsure, so it retrieves",
            GateReason.UNSUPPORTED_CLAIM: "the step names an entity that no kept passage backs, so it retrieves",
            GateReason.SUPPORTED_CLAIM: "every name the step states is covered by a kept passage, so retrieval is "
            "skipped",
            GateReason.QUESTION_FIRST: "the question itself was searched before the first step",
            GateReason.UNCOVERED_ENTITY: "an entity the answer needs (compared or bridge) has no kept passage yet, so "
            "it retrieves",
            GateReason.NEVER_RETRIEVE: f"retrieval is off (retrieve='never'; uncertainty {u}, delta {delta})",
        }.get(self.reason, self.reason.doc) + (
            f"; the search failed ({self.error}), so nothing was retrieved" if self.error else ""
        )

    def to_metadata(self) -> dict[str, Any]:
        """The keys put on every document (node) the gated retriever returns (``GATE_METADATA_KEYS``)."""
        return {
            "seakr_gate_retrieve": self.retrieve,
            "seakr_gate_reason": self.reason.value,
            "seakr_gate_uncertainty": _metadata_number(self.uncertainty),
            "seakr_gate_delta": float(self.delta),
        }

    def to_dict(self) -> dict[str, Any]:
        """Strict-JSON form (``uncertainty`` as traces write it: ``"inf"`` when not finite); the documents and
        the assessment are left out, their count is ``num_documents``."""
        return {
            "query": self.query,
            "retrieve": self.retrieve,
            "reason": self.reason.value,
            "explanation": self.explanation,
            "uncertainty": number_to_json(self.uncertainty),
            "delta": number_to_json(float(self.delta)),
            "generation": self.generation,
            "states_answer": self.states_answer,
            "single_hop": self.single_hop,
            "error": self.error,
            "num_documents": len(self.documents),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> GateDecision:
        """The decision :meth:`to_dict` wrote (without its documents)."""
        return cls(
            query=data["query"],
            retrieve=bool(data["retrieve"]),
            reason=GateReason(data["reason"]),
            uncertainty=number_from_json(data["uncertainty"]),
            delta=number_from_json(data["delta"]),
            generation=data.get("generation", ""),
            states_answer=bool(data.get("states_answer", False)),
            single_hop=bool(data.get("single_hop", False)),
            error=data.get("error"),
        )


@dataclass(frozen=True)
class CandidateScore:
    """A passage as SeaKR's self-aware re-ranking judged it.

    Attributes:
        passage_id: The passage's id.
        search_rank: Its 1-based position in the search results (the re-ranker's input).
        uncertainty: The model's uncertainty after reading it, what the re-ranking compares (lower = better);
            ``inf`` when the passage is unscorable (the model wrote nothing after reading it; single-hop: no
            answer), which ranks it last.
        chosen: Whether it is the passage kept: the least uncertain, ties keeping the search order (a rule such as
            ``keep-first-result`` may have narrowed the candidates first).
        generation: What the model wrote after reading it.
    """

    passage_id: str
    search_rank: int
    uncertainty: float
    chosen: bool = False
    generation: str = ""

    @classmethod
    def from_candidate(cls, candidate: CandidateTrace) -> CandidateScore:
        """The score of a core re-ranking candidate (``SeaKR.rerank``, a trace's ``StepTrace.candidates``)."""
        return cls(
            candidate.passage.id,
            candidate.rank,
            float(candidate.rank_value),
            candidate.chosen,
            candidate.generation.strip(),
        )

    @property
    def scorable(self) -> bool:
        """Whether the model could be judged on this passage (a finite uncertainty)."""
        return math.isfinite(self.uncertainty)

    @property
    def relevance(self) -> float | None:
        """The framework score, higher = better as LangChain's ``relevance_score`` and LlamaIndex's node score
        expect: minus the uncertainty; ``None`` when unscorable."""
        return -self.uncertainty if self.scorable else None

    def to_metadata(self) -> dict[str, Any]:
        """The keys put on each re-ranked document (node) (``CANDIDATE_METADATA_KEYS``)."""
        return {
            "seakr_uncertainty": _metadata_number(self.uncertainty),
            "seakr_search_rank": self.search_rank,
            "seakr_chosen": self.chosen,
            "seakr_generation": self.generation,
        }


@dataclass(frozen=True)
class FinalChoice:
    """SeaKR's final self-aware reasoning: the answer kept and every final candidate's uncertainty.

    Attributes:
        strategy: The strategy whose answer won (``"rationales"``/``"knowledge"``; single-hop ``"direct"``/
            ``"passage"``; a baseline's ``"chain"``).
        answer: The answer kept (``""`` when there was none).
        uncertainties: Each final candidate's uncertainty, by strategy (both, when the loop reasoned twice).
    """

    strategy: str
    answer: str
    uncertainties: Mapping[str, float] = field(default_factory=dict)

    @classmethod
    def from_finals(cls, finals: Mapping[str, FinalTrace], strategy: str, answer: str | None = None) -> FinalChoice:
        """The choice among ``finals`` that ``strategy`` won."""
        if strategy not in finals:
            raise ValueError(f"strategy {strategy!r} is not one of the final candidates {sorted(finals)}")
        text = finals[strategy].answer if answer is None else answer
        return cls(strategy, text or "", {k: float(f.uncertainty.value) for k, f in finals.items()})

    def to_metadata(self) -> dict[str, Any]:
        """The keys put on an answer's metadata (``FINAL_METADATA_KEYS``)."""
        return {
            "seakr_final_strategy": self.strategy,
            "seakr_final_uncertainties": {k: _metadata_number(v) for k, v in self.uncertainties.items()},
        }


def chosen_passage_metadata(result: SeaKRResult) -> dict[str, dict[str, Any]]:
    """The metadata of each passage the loop kept, by passage id: the round it was kept in (``seakr_step``, 0-based)
    and its :class:`CandidateScore` keys.  Both adapters put it on the documents (nodes) an answer returns."""
    out: dict[str, dict[str, Any]] = {}
    for step in result.steps:
        for c in step.candidates:
            if c.chosen:
                out.setdefault(
                    c.passage.id, {"seakr_step": step.index, **CandidateScore.from_candidate(c).to_metadata()}
                )
    return out
