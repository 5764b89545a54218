"""``AnchorQueries``: a query that drifted off the question gets the question's missing entity or its words."""

from fakes import Reply
from rule_support import SMALL, is_step, run

from seakr_integrations.reasoning import SeaKRConfig
from seakr_integrations.reasoning.entities import anchor_query
from seakr_integrations.reasoning.rules import AnchorQueries


def drifting(prompt, config):
    if not is_step(config) or "Context:" in prompt:
        return Reply("So the answer is France.")
    return Reply("Chocolate chip cookies are sweet.", spread=5.0)  # nothing to do with the question


def test_a_drifting_query_gets_the_questions_entity():
    result, _ = run(SeaKRConfig(**SMALL, rules=(AnchorQueries(),)), drifting)
    assert result.steps[0].query.startswith("Eiffel Tower ")
    paper, _ = run(SeaKRConfig.paper(**SMALL), drifting)
    assert "Eiffel" not in paper.steps[0].query and "Chocolate" in paper.steps[0].query


def test_anchor_query_prefers_a_missing_entity_then_the_questions_words():
    assert anchor_query("cookies", "Which country is the Eiffel Tower in?", ["Eiffel Tower"]) == "Eiffel Tower cookies"
    assert anchor_query("Eiffel Tower height", "Which country is the Eiffel Tower in?", ["Eiffel Tower"]) == (
        "Eiffel Tower height"
    )
    assert anchor_query("cookies", "Which country is it in?", []) == "country cookies"
    assert anchor_query("country cookies", "Which country is it in?", []) == "country cookies"
