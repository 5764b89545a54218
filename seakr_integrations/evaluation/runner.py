"""Running a method over a question file: scored, timed, written question by question, resumable.

The loop is deliberately plain: take the questions the results file does not hold yet, answer them in small
batches (questions in one batch share back-end batches), score each answer as SPEC section 8 says, append each
record durably, and keep a running EM/F1 on the progress bar.  A question that fails is recorded as a failed row
(scored 0, with its error) and the others go on; running the same command again answers it again (a server that was
down is up by then), its new row in place of the failed one.  Killing it at any point loses at most the batch
in flight; running the same command again continues from there.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from seakr_integrations.evaluation.methods import Method, MethodAnswer
from seakr_integrations.evaluation.questions import Question
from seakr_integrations.evaluation.results import ResultsFile
from seakr_integrations.evaluation.scoring import score

__all__ = ["EvalSummary", "evaluate", "summarize"]


@dataclass(frozen=True)
class EvalSummary:
    """Averages over the records of one results file (one method on one dataset).

    Attributes:
        questions: Records averaged.
        em: Mean exact match, in [0, 1].
        f1: Mean token F1, in [0, 1].
        retrievals: Mean searches per question.
        lm_calls: Mean prompts generated per question.
        generated_tokens: Mean tokens generated per question (samples included).
        seconds: Mean wall-clock seconds per question (a batch's time shared equally by its questions).
        failed: Records of questions that failed (scored 0; their ``error`` says why).
    """

    questions: int
    em: float
    f1: float
    retrievals: float
    lm_calls: float
    generated_tokens: float
    seconds: float
    failed: int = 0

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def summarize(records: Sequence[dict[str, Any]]) -> EvalSummary:
    """Mean scores and costs of result records (raises on an empty list: nothing to average)."""
    if not records:
        raise ValueError("no results to summarise: run seakr eval first, or check the results file")
    n = len(records)

    def mean(key: str) -> float:
        return sum(float(r[key]) for r in records) / n

    return EvalSummary(
        n,
        mean("em"),
        mean("f1"),
        mean("retrievals"),
        mean("lm_calls"),
        mean("generated_tokens"),
        mean("seconds"),
        sum(1 for r in records if r.get("error")),
    )


def _record(question: Question, answer: MethodAnswer, seconds: float, keep_trace: bool) -> dict[str, Any]:
    s = score(answer.prediction, question.answers)
    record = {
        "id": question.id,
        "question": question.question,
        "type": question.type,
        "golds": list(question.answers),
        "prediction": answer.prediction,
        "em": s.em,
        "f1": s.f1,
        "retrievals": answer.retrievals,
        "lm_calls": answer.lm_calls,
        "generated_tokens": answer.generated_tokens,
        "seconds": seconds,
    }
    if answer.error is not None:  # a failed question is a row of its own, scored 0, and the run goes on
        record["error"] = answer.error
    if question.supporting_titles:  # lets the report check which passages the re-ranking kept
        record["supporting_titles"] = list(question.supporting_titles)
    if keep_trace:
        record["trace"] = answer.trace
    return record


def evaluate(
    method: Method,
    questions: Sequence[Question],
    results: ResultsFile,
    *,
    batch_size: int = 8,
    progress: bool = True,
    keep_trace: bool = True,
) -> EvalSummary:
    """Answer the questions ``results`` does not hold an answer to yet (failed ones again), writing one scored
    record per question.

    Args:
        method: What answers.
        questions: The questions to evaluate (ids must be unique; see ``read_questions``).
        results: The open results file (its configuration must describe ``method``; see ``ResultsFile.open``).
        batch_size: Questions answered together (they share back-end batches; a kill loses at most these).
        progress: Show a progress bar with the running EM and F1.
        keep_trace: Store each question's full decision trace in its record.

    Returns:
        The summary over every record in the file (resumed ones included).
    """
    if batch_size < 1:
        raise ValueError(f"batch_size={batch_size}: must be >= 1")
    todo = [q for q in questions if q.id not in results.done]
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=len(questions), initial=len(questions) - len(todo), desc=method.name, unit="q")
    try:
        for start in range(0, len(todo), batch_size):
            batch = todo[start : start + batch_size]
            began = time.perf_counter()
            answers = method.answer_many([q.question for q in batch])
            if len(answers) != len(batch):
                raise RuntimeError(f"{method.name} returned {len(answers)} answers for {len(batch)} questions")
            each = (time.perf_counter() - began) / len(batch)
            for question, answer in zip(batch, answers, strict=True):
                results.append(_record(question, answer, each, keep_trace))
            if bar is not None:
                now = summarize(results.records)
                bar.set_postfix(EM=f"{now.em:.3f}", F1=f"{now.f1:.3f}", refresh=False)
                bar.update(len(batch))
    finally:
        if bar is not None:
            bar.close()
    wanted = {q.id for q in questions}
    return summarize([r for r in results.records if r["id"] in wanted])
