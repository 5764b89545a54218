"""``AnswerAlone``: a final generation that is the answer alone is read as the answer, without asking again; in the
light preset, not in the default."""

import pytest
from fakes import Reply
from rule_support import SMALL, eiffel, final_calls, is_step, run

from seakr_integrations.reasoning import SeaKRConfig
from seakr_integrations.reasoning.rules import DEFAULT_RULES, LIGHT_RULES, AnswerAlone
from seakr_integrations.reasoning.rules.answer_alone import bare_answer


@pytest.mark.parametrize(
    ("text", "answer"),
    [
        (" 8", "8"),  # SmolLM2's final generation for "How many legs does a spider have?" (light preset)
        ("8.", "8"),
        ("Curly Lambeau", "Curly Lambeau"),
        ("August 25, 1963", "August 25, 1963"),
        ("Paris, France", "Paris"),  # the comma rule, as for a stated answer
        ('"The Wall".', "The Wall"),
        ("yes", "yes"),
        ("No.", "No"),
        ("It is in France.", None),  # a sentence: " So the answer is" is asked for, as the authors do
        ("250 million copies.", None),  # three words and a period: mostly a sentence
        ("Lola Montes died first.", None),
        ("A spider has eight legs.", None),
        ("The tower is tall", None),
        ("Kate Millett attended the University of Minnesota", None),
        ("Oxford. Cambridge", None),
        ("Oxford\nCambridge", None),
        ("The answer is", None),
        ("", None),
    ],
)
def test_bare_answer_reads_a_generation_that_is_the_answer_alone(text, answer):
    assert bare_answer(text) == answer


def says_eight(prompt, config):
    if is_step(config):
        return eiffel(prompt, config)
    if prompt.endswith("So the answer is"):
        return Reply(" no.")  # what a small model writes when asked again: the last exemplar's answer
    return Reply("8")


def test_the_answer_alone_is_given_without_asking_again():
    alone, backend = run(SeaKRConfig(**SMALL, rules=(AnswerAlone(),)), says_eight)
    assert alone.answer == "8" and not any(p.endswith("So the answer is") for p, _ in final_calls(backend))
    assert {"rule": "answer-alone", "round": None, "what": "answer read without asking again"} in alone.rules_applied
    paper, _ = run(SeaKRConfig.paper(**SMALL), says_eight)
    assert paper.answer == "no"


def test_it_is_in_the_light_preset_only():
    assert SeaKRConfig.light().rules == LIGHT_RULES == (*DEFAULT_RULES, AnswerAlone())
    assert not any(r.name == "answer-alone" for r in SeaKRConfig().rules)
