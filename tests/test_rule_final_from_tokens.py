"""``FinalFromTokens``: the final answers are compared by their greedy token probabilities, none sampled."""

from fakes import Reply
from rule_support import SMALL, eiffel, final_calls, is_step, parse, run

from seakr_integrations.reasoning import SeaKRConfig
from seakr_integrations.reasoning.rules import FinalFromTokens


def respond(low_from: str):
    """The final answer reasoned from ``low_from`` ("steps" or "passages") has a low-probability word."""

    def reply(prompt, config):
        context, _ = parse(prompt)
        if is_step(config):
            return eiffel(prompt, config)
        from_steps = bool(context) and context[0].startswith("It is")
        text = "So the answer is Italy" if from_steps else "So the answer is France"
        return Reply(text, low=("answer",) if (low_from == "steps") == from_steps else ())

    return reply


def test_the_answer_with_the_surer_tokens_wins_and_no_final_is_sampled():
    result, backend = run(SeaKRConfig(**SMALL, rules=(FinalFromTokens(),)), respond("steps"))
    assert result.strategy == "knowledge" and result.answer == "France"
    assert all(c.k == 0 for _, c in final_calls(backend))
    assert result.finals["rationales"].screen.value > result.finals["knowledge"].screen.value
    result, _ = run(SeaKRConfig(**SMALL, rules=(FinalFromTokens(),)), respond("passages"))
    assert result.strategy == "rationales" and result.answer == "Italy"
    assert {"rule": "final-from-tokens", "round": None, "what": "final answer from rationales"} in result.rules_applied


def test_only_a_greedy_estimator_is_taken():
    import pytest

    with pytest.raises(ValueError, match="greedy continuation alone"):
        FinalFromTokens(estimator="eigenscore")
    assert FinalFromTokens().to_dict() == {"rule": "final-from-tokens", "estimator": "min_token_prob"}
