"""``SampleFinalsWhenTheyDiffer``: the final answers are sampled only when they differ, and the choice is the
paper's."""

import pytest
from fakes import Reply
from rule_support import SMALL, eiffel, final_calls, is_step, parse, run

from seakr_integrations.reasoning import SeaKRConfig
from seakr_integrations.reasoning.account import decision_account
from seakr_integrations.reasoning.rules import SampleFinalsWhenTheyDiffer


def finals_saying(rationales: str, knowledge: str, *, state_it: bool = True):
    """A model whose final answers from the rationales and from the passages are these (stated at once, or only when
    asked again with " So the answer is")."""

    def respond(prompt, config):
        context, answer = parse(prompt)
        if is_step(config):
            return eiffel(prompt, config)
        from_steps = bool(context) and context[0].startswith("It is")
        said, spread = (rationales, 0.2) if from_steps else (knowledge, 0.3)
        if state_it or answer.endswith("So the answer is"):
            return Reply(f"So the answer is {said}" if state_it else said, spread)
        return Reply("Let me think about it", 1.0)

    return respond


DECIDING = SeaKRConfig(**SMALL, rules=(SampleFinalsWhenTheyDiffer(),))


@pytest.mark.parametrize("state_it", [True, False])
def test_final_samples_are_drawn_only_for_answers_that_differ_and_give_the_papers_choice(state_it):
    respond = finals_saying("France", "Italy", state_it=state_it)
    always, always_backend = run(SeaKRConfig.paper(**SMALL), respond)
    deciding, backend = run(DECIDING, respond)
    assert (deciding.answer, deciding.strategy) == (always.answer, always.strategy) == ("France", "rationales")
    for s in ("rationales", "knowledge"):
        assert deciding.finals[s].uncertainty.value == pytest.approx(always.finals[s].uncertainty.value)
    sampled = [(p, c) for p, c in final_calls(backend) if c.k > 0]
    # the samples of each answer's own call: the one that asked again when the first stated no answer
    assert len(sampled) == 2 and all(p.endswith("So the answer is") is not state_it for p, _ in sampled)
    if not state_it:  # the paper also sampled the first calls, whose uncertainty the calls asking again replaced
        assert deciding.generated_tokens < always.generated_tokens
        assert sum(c.k for _, c in final_calls(always_backend)) == 2 * sum(c.k for _, c in final_calls(backend))


def test_final_answers_that_agree_are_not_sampled():
    result, backend = run(DECIDING, finals_saying("France", "france"))
    assert result.answer == "france" and result.strategy == "knowledge"
    assert all(c.k == 0 for _, c in final_calls(backend)) and len(final_calls(backend)) == 2
    assert any("neither was sampled" in note for note in result.notes)
    assert decision_account(result).endswith("rationales gave the same answer, so neither was sampled: 'france'")
