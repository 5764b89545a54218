"""SeaKR's reasoning: the loop, its prompts, query building, answer extraction and the decision trace."""

from seakr_integrations.reasoning.answer import extract_answer, has_answer, is_unknown
from seakr_integrations.reasoning.config import SeaKRConfig
from seakr_integrations.reasoning.decisions import CandidateScore, FinalChoice, GateDecision, GateReason
from seakr_integrations.reasoning.events import (
    AnswerChosen,
    GateDecided,
    Observer,
    PassagesReranked,
    PassagesRetrieved,
    QuestionAnswered,
    QuestionFailed,
    SeaKREvent,
    StepAssessed,
    StepFinished,
)
from seakr_integrations.reasoning.exemplars import EXEMPLAR_SETS, Exemplar, exemplars
from seakr_integrations.reasoning.query import BuiltQuery, build_query
from seakr_integrations.reasoning.reasoner import RetrievalError, SeaKR
from seakr_integrations.reasoning.tables import candidate_rows, final_rows, step_rows
from seakr_integrations.reasoning.trace import (
    Assessment,
    CandidateTrace,
    FinalTrace,
    SeaKRResult,
    StepTrace,
    StopReason,
)

__all__ = [
    "EXEMPLAR_SETS",
    "AnswerChosen",
    "Assessment",
    "CandidateScore",
    "FinalChoice",
    "GateDecided",
    "GateDecision",
    "GateReason",
    "Observer",
    "PassagesReranked",
    "PassagesRetrieved",
    "QuestionAnswered",
    "QuestionFailed",
    "SeaKREvent",
    "StepAssessed",
    "StepFinished",
    "BuiltQuery",
    "CandidateTrace",
    "Exemplar",
    "FinalTrace",
    "RetrievalError",
    "SeaKR",
    "SeaKRConfig",
    "SeaKRResult",
    "StepTrace",
    "StopReason",
    "build_query",
    "candidate_rows",
    "exemplars",
    "extract_answer",
    "final_rows",
    "has_answer",
    "is_unknown",
    "step_rows",
]
