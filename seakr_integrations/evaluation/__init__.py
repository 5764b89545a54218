"""Evaluation: labelled question files, scoring (SPEC section 8), methods, resumable runs.

Kept apart from the reasoning loop, which answers questions: this package decides how well it did.  It exports what
an evaluation in Python writes and reads back; the rest is imported from the defining modules.
"""

from seakr_integrations.evaluation.methods import known_methods, make_method
from seakr_integrations.evaluation.questions import Question, QuestionFile, read_questions
from seakr_integrations.evaluation.results import ResultsFile, read_results
from seakr_integrations.evaluation.runner import EvalSummary, EvaluationStopped, evaluate, summarize
from seakr_integrations.evaluation.scoring import Score, score

__all__ = [
    "EvalSummary",
    "EvaluationStopped",
    "Question",
    "QuestionFile",
    "ResultsFile",
    "Score",
    "evaluate",
    "known_methods",
    "make_method",
    "read_questions",
    "read_results",
    "score",
    "summarize",
]
