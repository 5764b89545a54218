"""What a question or step names and compares, coverage by passages, and anchored queries
(``reasoning.entities``), on questions of the shipped HotpotQA and 2Wiki files."""

import pytest
from fakes import passage

from seakr_integrations.reasoning.entities import (
    anchor_query,
    compared_entities,
    covers,
    entity_query,
    named_entities,
    uncovered,
)

COMPARED = [
    (
        "Who was born first, José Echegaray y Eizaguirre or P. J. O'Rourke?",
        ["José Echegaray y Eizaguirre", "P. J. O'Rourke"],
    ),
    (
        "Which film has the director died earlier, Remember The Day or Cast Up By The Sea?",
        ["Remember The Day", "Cast Up By The Sea"],
    ),
    (
        "Are Mauritz Stiller and Johannes Grenzfurthner both of the same nationality?",
        ["Mauritz Stiller", "Johannes Grenzfurthner"],
    ),
    (
        "Do both films Goodbye Again (1961 Film) and The Mystery Of Pine Creek Camp have the directors that share the "
        "same nationality?",
        ["Goodbye Again (1961 Film)", "The Mystery Of Pine Creek Camp"],
    ),
    (
        'Which English musician is known for both the songs "See Yourself" and "Withing You Without You"?',
        ["See Yourself", "Withing You Without You"],
    ),
    ("Which band is from England, Fireflight or Dirty Pretty Things?", ["Fireflight", "Dirty Pretty Things"]),
    ("This singer of A Rather Blustery Day also voiced what hedgehog?", []),
    ("Where was the father of Auguste Pierre Chouteau born?", []),
]


@pytest.mark.parametrize(("question", "compared"), COMPARED)
def test_compared_entities(question, compared):
    assert compared_entities(question) == compared


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ("The Blue Bead was directed by Enrique Vico Carré.", ["Blue Bead", "Enrique Vico Carré"]),
        ("This singer of A Rather Blustery Day also voiced what hedgehog?", ["A Rather Blustery Day"]),
        ("When was Nick Kellogg's father born?", ["Nick Kellogg"]),
        ("What is Opry Mills in Nashville, Tennessee?", ["Opry Mills", "Nashville", "Tennessee"]),
        ("He was born in 1960 and died in 1969.", []),
        ("", []),
    ],
)
def test_named_entities(text, names):
    assert named_entities(text) == names


def test_coverage_needs_every_content_word_in_title_or_text():
    p = passage("p1", "Apasionadamente is a 1944 Argentine film directed by Luis César Amadori.", "Apasionadamente")
    assert covers(p, "Apasionadamente") and covers(p, "Luis César Amadori")
    assert not covers(p, "The Blue Bead")
    assert uncovered(["Apasionadamente", "The Blue Bead"], [p]) == ["The Blue Bead"]
    assert uncovered(["The Blue Bead"], []) == ["The Blue Bead"]


def test_anchored_queries_keep_the_question_in_sight():
    question = "Who was born first, Matt Thiessen or George Thorogood?"
    # a drifted query that names no missing entity gets the first one
    assert anchor_query("full-length albums three certified Gold", question, ["George Thorogood"]).startswith(
        "George Thorogood "
    )
    # a query that already reaches for a missing entity is left alone
    assert anchor_query("George Thorogood born", question, ["George Thorogood"]) == "George Thorogood born"
    # nothing missing: a query sharing no word with the question gets its content words
    assert anchor_query("chocolate chip cookie", "Which cocktail is named after a legend?", []).startswith(
        "cocktail named legend"
    )
    question = "Which film has the director died earlier, Remember The Day or Cast Up By The Sea?"
    assert entity_query("Cast Up By The Sea", question) == "Cast Up By The Sea film director died earlier"
