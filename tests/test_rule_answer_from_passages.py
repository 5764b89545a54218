"""``AnswerFromPassages``: with passages kept, the answer is reasoned from them alone (one call, no choice)."""

from rule_support import SMALL, final_calls, run

from seakr_integrations.reasoning import SeaKRConfig
from seakr_integrations.reasoning.rules import AnswerFromPassages, SearchQuestionFirst


def test_only_the_passages_answer_is_generated():
    result, backend = run(SeaKRConfig(**SMALL, rules=(SearchQuestionFirst(), AnswerFromPassages())))
    assert set(result.finals) == {"knowledge"} and result.strategy == "knowledge" and result.answer == "France"
    assert len(final_calls(backend)) == 1 and all(c.k == 0 for _, c in final_calls(backend))
    assert {"rule": "answer-from-passages", "round": None, "what": "final answers"} in result.rules_applied


def test_without_passages_the_rationales_answer():
    result, _ = run(SeaKRConfig(**{**SMALL, "delta": 100.0}, rules=(AnswerFromPassages(),)), docs=())
    assert set(result.finals) == {"rationales", "knowledge"}
    assert result.passages == []
