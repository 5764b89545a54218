"""Running a method over a question file: scored, timed, written question by question, resumable; a failed question
is a failed row (scored 0), and a server unavailable for several in a row stops the run (docs/design/core.md).
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from seakr_integrations.backends.remote_errors import ServerUnavailableError, server_unavailable
from seakr_integrations.evaluation.interface import Method, MethodAnswer, StreamingMethod
from seakr_integrations.evaluation.questions import Question
from seakr_integrations.evaluation.results import ResultsFile
from seakr_integrations.evaluation.scoring import score

STOP_AFTER_UNAVAILABLE = 3
"""Questions in a row that fail because the server is unavailable before ``evaluate`` stops the run."""


class EvaluationStopped(RuntimeError):
    """``evaluate`` stopped early: the server was unavailable for several questions in a row (rerun to resume).

    Attributes:
        error: The ``ServerUnavailableError`` of the first of those questions.
        in_a_row: Questions that failed in a row.
        answered: Questions answered in the results file.
        left: Questions still to answer (the failed ones included).
    """

    def __init__(self, error: ServerUnavailableError, in_a_row: int, results: ResultsFile, left: int) -> None:
        self.error, self.in_a_row, self.left = error, in_a_row, left
        self.answered = sum(1 for r in results.records if not r.get("error"))
        super().__init__(
            f"stopped: the server at {error.base_url} did not answer within {error.timeout:g} s on {in_a_row} "
            f"questions in a row (the first: {error}). The {self.answered} answered question(s) are saved in "
            f"{results.path}; once the server answers again, run the same command to resume ({left} question(s) "
            "left, the failed ones included)."
        )


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
    keys = ("em", "f1", "retrievals", "lm_calls", "generated_tokens", "seconds")
    means = [sum(float(r[key]) for r in records) / len(records) for key in keys]
    return EvalSummary(len(records), *means, sum(1 for r in records if r.get("error")))


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


def _answered(
    method: Method, todo: Sequence[Question], batch_size: int
) -> Iterator[tuple[Question, MethodAnswer, float, bool]]:
    """Each question with its answer, its share of the run's wall time (the shares add up to the run's time) and
    whether the answers so far are a whole number of batches."""
    if isinstance(method, StreamingMethod):
        last = time.perf_counter()
        for i, answer in method.iter_answers([q.question for q in todo], batch_size):
            now = time.perf_counter()
            yield todo[i], answer, now - last, True
            last = now
        return
    for start in range(0, len(todo), batch_size):
        batch = todo[start : start + batch_size]
        began = time.perf_counter()
        try:
            answers = method.answer_many([q.question for q in batch])
        except Exception as error:  # a method that fails its whole batch (closed-book) on a server's failure
            if server_unavailable(error) is None:
                raise
            answers = [MethodAnswer("", 0, 0, 0, error=f"{type(error).__name__}: {error}", exception=error)]
            answers *= len(batch)
        if len(answers) != len(batch):
            raise RuntimeError(f"{method.name} returned {len(answers)} answers for {len(batch)} questions")
        each = (time.perf_counter() - began) / len(batch)
        for n, (question, answer) in enumerate(zip(batch, answers, strict=True), 1):
            yield question, answer, each, n == len(batch)


def evaluate(
    method: Method,
    questions: Sequence[Question],
    results: ResultsFile,
    *,
    batch_size: int = 8,
    progress: bool = True,
    keep_trace: bool = True,
    stop_after_unavailable: int | None = STOP_AFTER_UNAVAILABLE,
) -> EvalSummary:
    """Answer the questions ``results`` does not hold an answer to yet (failed ones again), one scored record each;
    the summary covers every record in the file (resumed ones included).

    Args:
        questions: The questions to evaluate (ids must be unique; see ``read_questions``).
        results: The open results file (its configuration must describe ``method``; see ``ResultsFile.open``).
        batch_size: Questions in progress at once, sharing back-end batches (a kill loses at most these).
        progress: Show a progress bar with the running EM and F1.
        keep_trace: Store each question's full decision trace in its record.
        stop_after_unavailable: Stop after this many failures in a row on an unavailable server (``None``: never).

    Raises:
        EvaluationStopped: ``stop_after_unavailable`` was reached with questions left (rerun to resume).
    """
    if batch_size < 1:
        raise ValueError(f"batch_size={batch_size}: must be >= 1")
    if stop_after_unavailable is not None and stop_after_unavailable < 1:
        raise ValueError(f"stop_after_unavailable={stop_after_unavailable}: must be >= 1, or None to never stop")
    todo = [q for q in questions if q.id not in results.done]
    in_a_row, first = 0, None  # questions that failed in a row because the server was unavailable; the first's error
    from tqdm.auto import tqdm

    initial = len(questions) - len(todo)
    with tqdm(total=len(questions), initial=initial, desc=method.name, unit="q", disable=not progress) as bar:
        for done, (question, answer, seconds, whole) in enumerate(_answered(method, todo, batch_size), 1):
            results.append(_record(question, answer, seconds, keep_trace))
            cause = server_unavailable(answer.exception) if answer.error is not None else None
            in_a_row = 0 if cause is None else in_a_row + 1
            first = cause if in_a_row == 1 else first
            if progress:
                now = summarize(results.records)
                bar.set_postfix(EM=f"{now.em:.3f}", F1=f"{now.f1:.3f}", refresh=False)
            bar.update(1)
            stop = stop_after_unavailable is not None and in_a_row >= stop_after_unavailable
            if stop and whole and len(todo) > done and first:
                raise EvaluationStopped(first, in_a_row, results, sum(q.id not in results.done for q in questions))
    wanted = {q.id for q in questions}
    return summarize([r for r in results.records if r["id"] in wanted])
