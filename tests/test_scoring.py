"""Scoring as SPEC section 8: SQuAD normalisation, EM over golds, token F1 max over golds, the yes/no rule."""

import pytest

from seakr_integrations.evaluation.scoring import exact_match, f1, normalize_answer, score


@pytest.mark.parametrize(
    ("text", "normal"),
    [
        ("The Eiffel Tower!", "eiffel tower"),
        ("  An  apple, a PEAR ", "apple pear"),
        ("theatre", "theatre"),
        ("August 25, 1963", "august 25 1963"),
        ("", ""),
    ],
)
def test_normalisation(text, normal):
    assert normalize_answer(text) == normal


def test_exact_match_is_any_gold():
    assert exact_match("the Oxford", ["Cambridge", "Oxford"]) == 1.0
    assert exact_match("Oxford University", ["Oxford"]) == 0.0


def test_f1_is_token_overlap_max_over_golds():
    assert f1("Oxford University", ["Oxford"]) == pytest.approx(2 * 0.5 * 1 / 1.5)
    assert f1("University of Oxford", ["Oxford University", "Cambridge"]) == pytest.approx(2 * (2 / 3) * 1 / (5 / 3))
    assert f1("Paris", ["London"]) == 0.0
    assert f1("", ["London"]) == 0.0


def test_yes_no_mismatch_scores_zero_even_with_token_overlap():
    assert f1("no", ["yes"]) == 0.0
    assert f1("yes it is", ["yes"]) == 0.0  # normalises to "yes it is", not "yes": the rule applies to the gold
    assert f1("Yes.", ["yes"]) == 1.0
    assert score("no", ["no"]).em == 1.0


def test_no_gold_is_an_error():
    with pytest.raises(ValueError, match="at least one"):
        score("x", [])
