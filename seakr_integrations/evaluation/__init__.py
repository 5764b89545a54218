"""Evaluation: labelled question files and (next) scoring, baselines and reports.

Kept apart from the reasoning loop: the loop answers questions, this package decides how well it did.
"""

from seakr_integrations.evaluation.questions import QUESTION_EXAMPLE, Question, QuestionFile, read_questions

__all__ = ["QUESTION_EXAMPLE", "Question", "QuestionFile", "read_questions"]
