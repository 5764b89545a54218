"""``StepLimit``: the loop stops after a given number of reasoning steps."""

from rule_support import SMALL, run

from seakr_integrations.reasoning import SeaKRConfig
from seakr_integrations.reasoning.records import StopReason
from seakr_integrations.reasoning.rules import StepLimit


def test_the_loop_stops_at_the_limit():
    result, _ = run(SeaKRConfig(**{**SMALL, "delta": 100.0}, rules=(StepLimit(1),)))
    assert len(result.steps) == 1 and result.stop_reason == StopReason.STEP_LIMIT
    assert {"rule": "step-limit", "round": 1, "what": "step limit"} in result.rules_applied
    assert StepLimit().to_dict() == {"rule": "step-limit", "max_steps": 2}


def test_a_limit_below_one_is_refused():
    import pytest

    with pytest.raises(ValueError, match="max_steps"):
        StepLimit(0)
