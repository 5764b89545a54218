"""SeaKR's reasoning: the loop, its prompts, query building, answer extraction and the decision trace.

Exported: what a user writes (``SeaKR``, ``SeaKRConfig``, the trace tables) and gets back (trace records, the gate's
decision, the events of ``SeaKR.iter_events``); the loop's parts are imported from their modules.
"""

from seakr_integrations.reasoning.config import SeaKRConfig
from seakr_integrations.reasoning.decisions import GateDecision, GateReason
from seakr_integrations.reasoning.events import (
    AnswerChosen,
    GateDecided,
    PassagesReranked,
    PassagesRetrieved,
    QuestionAnswered,
    QuestionFailed,
    SeaKREvent,
    StepAssessed,
    StepFinished,
)
from seakr_integrations.reasoning.reasoner import RetrievalError, SeaKR
from seakr_integrations.reasoning.records import Assessment, CandidateTrace, FinalTrace, StepTrace, StopReason
from seakr_integrations.reasoning.tables import candidate_rows, final_rows, step_rows
from seakr_integrations.reasoning.trace import SeaKRResult

__all__ = [
    "AnswerChosen",
    "Assessment",
    "CandidateTrace",
    "FinalTrace",
    "GateDecided",
    "GateDecision",
    "GateReason",
    "PassagesReranked",
    "PassagesRetrieved",
    "QuestionAnswered",
    "QuestionFailed",
    "RetrievalError",
    "SeaKR",
    "SeaKRConfig",
    "SeaKREvent",
    "SeaKRResult",
    "StepAssessed",
    "StepFinished",
    "StepTrace",
    "StopReason",
    "candidate_rows",
    "final_rows",
    "step_rows",
]
