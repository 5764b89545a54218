"""Evaluation: labelled question files, scoring (SPEC section 8), methods, resumable runs.

Kept apart from the reasoning loop: the loop answers questions, this package decides how well it did.
"""

from seakr_integrations.evaluation.coverage import Coverage, index_coverage
from seakr_integrations.evaluation.methods import METHODS, Method, MethodAnswer, SeaKRMethod, known_methods, make_method
from seakr_integrations.evaluation.questions import QUESTION_EXAMPLE, Question, QuestionFile, read_questions
from seakr_integrations.evaluation.results import ResultsFile, config_fingerprint, read_results
from seakr_integrations.evaluation.runner import EvalSummary, evaluate, summarize
from seakr_integrations.evaluation.scoring import Score, exact_match, f1, normalize_answer, score

__all__ = [
    "METHODS",
    "QUESTION_EXAMPLE",
    "Coverage",
    "EvalSummary",
    "Method",
    "MethodAnswer",
    "Question",
    "QuestionFile",
    "ResultsFile",
    "Score",
    "SeaKRMethod",
    "config_fingerprint",
    "evaluate",
    "exact_match",
    "f1",
    "index_coverage",
    "known_methods",
    "make_method",
    "normalize_answer",
    "read_questions",
    "read_results",
    "score",
    "summarize",
]
