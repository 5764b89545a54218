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
    offered_options,
    option_answer,
    titled,
    uncovered,
)
from seakr_integrations.retrieval.passage import Passage

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
    names = named_entities(question)
    assert entity_query("Cast Up By The Sea", question, names) == "Cast Up By The Sea film director died earlier"


DUEL = passage(
    "duel",
    "Duel in the Jungle is a 1954 British adventure film directed by George Marshall and starring Dana Andrews, "
    "Jeanne Crain and David Farrar. It was shot in Southern Rhodesia.",
    "Duel in the Jungle",
)


def test_a_passage_is_about_an_entity_its_title_names():
    assert titled(DUEL, "Duel In The Jungle") and not titled(DUEL, "George Marshall")
    assert titled(passage("b", "Binnya U was a king.", "Binnya U"), "King Binnya U")  # the title without a qualifier
    untitled = Passage(id="c", title="", text="George Marshall was an American film director.")
    assert titled(untitled, "George Marshall")  # no title: its opening words


def test_an_answer_naming_neither_option_becomes_the_option_it_leads_to():
    question = "Which film has the director who died earlier, Santa And The Fairy Snow Queen or Hearts In Bondage?"
    bondage = passage("hb", "Hearts in Bondage is a 1936 film directed by Lew Ayres.", "Hearts in Bondage")
    santa = passage(
        "s", "Santa and the Fairy Snow Queen is a 1951 film by Sid Davis.", "Santa and the Fairy Snow Queen"
    )
    options = offered_options(question)
    assert options == ["Santa And The Fairy Snow Queen", "Hearts In Bondage"]
    assert option_answer(options, "Lew Ayres", [santa, bondage]) == "Hearts In Bondage"  # its passage names him
    # an answer that is an option, a yes/no answer, or a question without options is left alone
    assert option_answer(options, "hearts in bondage", [bondage]) == "hearts in bondage"
    assert option_answer(options, "yes", [bondage]) == "yes"
    assert offered_options("Who directed Hearts in Bondage?") == []
    assert option_answer(offered_options("Who directed Hearts in Bondage?"), "Lew Ayres", [bondage]) == "Lew Ayres"
    # no passage leads there: the other final answer, when it names an option
    assert option_answer(options, "Steven Spielberg", [], ["Santa and the Fairy Snow Queen"]) == (
        "Santa And The Fairy Snow Queen"
    )
    assert option_answer(options, "Steven Spielberg", [], ["George Lucas"]) == "Steven Spielberg"
