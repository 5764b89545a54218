"""The trace as flat rows: the same rows from a live result, its JSON form and a chain's returned trace."""

import json
import math

import pytest
from fakes import FakeRetriever, Reply, ScriptedBackend, passage
from test_reasoner import CONFIG, is_step, parse
from test_reasoner_components import eiffel

from seakr_integrations.reasoning import SeaKR, candidate_rows, final_rows, step_rows


def _result():
    """The shared Eiffel scenario, except that the step after the passage is empty (infinitely uncertain)."""

    def respond(prompt, config):
        _, context, answer = parse(prompt)
        if is_step(config) and context and answer:
            return Reply("", spread=1.0)
        return eiffel(prompt, config)

    retriever = FakeRetriever(default=[passage("p1"), passage("p2"), passage("p3")])
    return SeaKR(ScriptedBackend(respond), retriever, CONFIG).answer("Which country is the Eiffel Tower in?")


def test_rows_follow_the_trace():
    result = _result()
    steps = step_rows(result)
    assert steps[0]["step"] == 1 and steps[0]["decision"] == "retrieve"
    assert steps[0]["uncertainty"] == pytest.approx(result.steps[0].uncertainty.value)
    assert steps[0]["query"] == "Eiffel Tower stands" and steps[0]["masked_words"] == "Germany"
    assert (steps[0]["candidates"], steps[0]["chosen_passage_id"], steps[0]["accepted"]) == (3, "p2", "It is in France")
    assert steps[0]["chosen_title"] == result.steps[0].candidates[1].passage.title
    assert steps[1]["uncertainty"] == math.inf  # the empty step: inf in the trace, in its JSON form and here
    cands = candidate_rows(result)
    assert [(c["step"], c["search_rank"], c["id"], c["chosen"]) for c in cands][:3] == [
        (1, 1, "p1", False),
        (1, 2, "p2", True),
        (1, 3, "p3", False),
    ]
    assert cands[1]["uncertainty"] < cands[0]["uncertainty"] < cands[2]["uncertainty"]
    assert [c["rank_value"] for c in cands[:3]] == [c["uncertainty"] for c in cands[:3]]
    finals = final_rows(result)
    assert {f["strategy"] for f in finals} == {"rationales", "knowledge"}
    assert [f["strategy"] for f in finals if f["won"]] == [result.strategy]
    assert all(f["answer"] == "France" for f in finals)


def test_same_rows_from_the_json_form_and_a_clear_error_otherwise():
    result = _result()
    plain = json.loads(result.to_json())
    for rows in (step_rows, candidate_rows, final_rows):
        assert rows(plain) == rows(result)
    assert plain["steps"][1]["uncertainty"]["value"] == "inf"
    with pytest.raises(ValueError, match="not a SeaKR trace"):
        step_rows({"answer": "France"})
    with pytest.raises(TypeError, match="SeaKRResult or its to_dict"):
        step_rows(["France"])
