"""The decisions named once: the core's records on both adapters' outputs, the event name table, typed stop reasons,
and versioned trace JSON that reads back exactly."""

from __future__ import annotations

import json
import math
import re

import pytest
from fakes import FakeRetriever, Reply, ScriptedBackend, passage
from llamaindex_fakes import CONFIG, QUESTION, NodeListRetriever, eiffel, llm_for, make_nodes
from test_langchain_adapters import ListRetriever
from test_trace_tables import _result

import llamaindex_seakr
from langchain_seakr import SelfAwareReranker as LangChainReranker
from langchain_seakr import UncertaintyGatedRetriever as LangChainGate
from llamaindex_seakr import SelfAwareReranker as LlamaIndexReranker
from llamaindex_seakr import UncertaintyGatedRetriever as LlamaIndexGate
from seakr_integrations.reasoning import GateDecision, GateReason, SeaKR, SeaKRResult, StepTrace, StopReason, events
from seakr_integrations.reasoning.decisions import (
    CANDIDATE_METADATA_KEYS,
    GATE_METADATA_KEYS,
    CandidateScore,
    FinalChoice,
)
from seakr_integrations.reasoning.jsonform import SCHEMA_VERSION
from seakr_integrations.uncertainty.estimate import Uncertainty


def _v1(data):
    """A trace's JSON form as version 1 has it (written before schema_version was recorded): non-finite numbers
    null, the step's kept passage under ``chosen``, no candidate texts."""
    if isinstance(data, dict):
        out = {k: _v1(v) for k, v in data.items() if k != "schema_version"}
        if "chosen_passage_id" in out:
            out["chosen"] = out.pop("chosen_passage_id")
        if "search_rank" in out:  # a candidate
            del out["text"]
        return out
    if isinstance(data, list):
        return [_v1(v) for v in data]
    return None if data in ("inf", "-inf", "nan") else data


# ------------------------------------------------------------------------------------------------- trace JSON
def test_trace_json_round_trips_exactly_with_infinite_uncertainties():
    result = _result()
    assert result.steps[1].uncertainty.value == math.inf  # the empty step
    text = result.to_json()
    data = json.loads(text)
    assert data["schema_version"] == SCHEMA_VERSION == 2
    assert data["steps"][1]["uncertainty"]["value"] == "inf" and "Infinity" not in text
    assert data["stop_reason"] == "repeated query" and data["steps"][0]["chosen_passage_id"] == "p2"
    back = SeaKRResult.from_json(text)
    assert back == result
    assert back.steps[1].uncertainty.value == math.inf and isinstance(back.stop_reason, StopReason)
    assert back.config == result.config and back.to_json() == text
    assert [c.passage for c in back.steps[0].candidates] == [c.passage for c in result.steps[0].candidates]


def test_minus_inf_and_nan_read_back_as_the_same_floats():
    result = _result()
    result.steps[0].candidates[0].rank_value = -math.inf
    result.steps[0].candidates[1].uncertainty = Uncertainty(math.nan, "eigenscore", 4, note="nan vector")
    data = json.loads(result.to_json())
    assert data["steps"][0]["candidates"][0]["rank_value"] == "-inf"
    assert data["steps"][0]["candidates"][1]["uncertainty"]["value"] == "nan"
    back = SeaKRResult.from_dict(data)
    assert back.steps[0].candidates[0].rank_value == -math.inf
    assert math.isnan(back.steps[0].candidates[1].uncertainty.value)


def test_a_version_1_trace_is_refused_saying_which_version_and_what_to_do():
    old = _v1(_result().to_dict())
    assert "schema_version" not in old and old["steps"][1]["uncertainty"]["value"] is None
    said = r"schema_version 1 \(it has no schema_version.*reads version 2 only.*seakr eval"
    with pytest.raises(ValueError, match=said):
        SeaKRResult.from_dict(json.loads(json.dumps(old)))
    with pytest.raises(ValueError, match=r"schema_version 1, which .* no longer reads"):  # a version 1 marked as such
        SeaKRResult.from_dict({**_result().to_dict(), "schema_version": 1})


def test_unreadable_traces_are_clear_errors():
    data = _result().to_dict()
    with pytest.raises(ValueError, match="schema_version 3, newer than the 2 .* upgrade seakr-integrations"):
        SeaKRResult.from_dict({**data, "schema_version": 3})
    with pytest.raises(ValueError, match="not a version number"):
        SeaKRResult.from_dict({**data, "schema_version": "two"})
    with pytest.raises(ValueError, match="not a SeaKR trace"):
        SeaKRResult.from_dict({"generation": "Paris", "uncertainty": {}})
    with pytest.raises(ValueError, match="not a JSON SeaKR trace"):
        SeaKRResult.from_json("{steps:")
    with pytest.raises(ValueError, match="malformed SeaKR trace"):
        SeaKRResult.from_dict({**data, "steps": [{"index": 0}]})
    with pytest.raises(ValueError, match="unknown stop reason 'tired'.*'answer found'"):
        SeaKRResult.from_dict({**data, "stop_reason": "tired"})


def test_stop_reasons_are_typed():
    result = _result()
    assert result.stop_reason is StopReason.REPEATED_QUERY and result.stop_reason == "repeated query"
    assert result.steps[-1].stop is StopReason.REPEATED_QUERY
    step = StepTrace(0, "x", Uncertainty(0.0, "eigenscore", 4), "accept")
    step.stop = "step limit"  # a string is read as its StopReason
    assert step.stop is StopReason.STEP_LIMIT
    with pytest.raises(ValueError, match="unknown stop reason 'bored'"):
        step.stop = "bored"
    assert json.dumps({"stop": StopReason.RETRIEVAL_ERROR}) == '{"stop": "retrieval error"}'


# -------------------------------------------------------------------------------------------- decision records
def test_records_round_trip_and_explain_themselves():
    backend = ScriptedBackend(lambda p, c: Reply("Paris is the capital", spread=0.0))
    assessment = SeaKR(backend, None, CONFIG).assess("capital of France?")
    sure = GateDecision.from_assessment(assessment, CONFIG)
    assert (sure.retrieve, sure.reason) == (False, GateReason.CONFIDENT) and "<= delta" in sure.explanation
    always = GateDecision.from_assessment(assessment, CONFIG, always_retrieve=True)
    assert (always.retrieve, always.reason, always.uncertainty) == (True, "always_retrieve", sure.uncertainty)
    never = GateDecision.from_assessment(assessment, CONFIG.with_(retrieve="never"))
    assert (never.retrieve, never.reason) == (False, GateReason.NEVER_RETRIEVE)
    for decision in (sure, always, never):
        assert GateDecision.from_dict(json.loads(json.dumps(decision.to_dict()))) == decision
    assert set(sure.to_metadata()) == set(GATE_METADATA_KEYS)
    unscorable = CandidateScore("p1", 2, math.inf, False, "")
    assert not unscorable.scorable and unscorable.relevance is None
    assert unscorable.to_metadata()["seakr_uncertainty"] is None and unscorable.uncertainty == math.inf
    assert json.loads(json.dumps(unscorable.to_metadata(), allow_nan=False)) == unscorable.to_metadata()
    result = _result()
    choice = FinalChoice.from_finals(result.finals, result.strategy, result.answer)
    assert choice.strategy == result.strategy and set(choice.uncertainties) == {"rationales", "knowledge"}
    assert json.loads(json.dumps(choice.to_metadata(), allow_nan=False)) == choice.to_metadata()
    with pytest.raises(ValueError, match="not one of the final candidates"):
        FinalChoice.from_finals(result.finals, "direct")


def _seakr_keys(metadata: dict) -> dict:
    return {k: v for k, v in metadata.items() if k.startswith("seakr_")}


def test_the_same_metadata_through_langchain_and_llamaindex():
    unsure = lambda p, c: Reply("It might be Lyon", spread=1.0)  # noqa: E731
    lc_docs = LangChainGate(retriever=ListRetriever(), llm=ScriptedBackend(unsure), config=CONFIG).invoke(QUESTION)
    li_nodes = LlamaIndexGate(NodeListRetriever(), llm_for(unsure), CONFIG).retrieve(QUESTION)
    lc = {d.id: _seakr_keys(d.metadata) for d in lc_docs}
    li = {n.node.node_id: _seakr_keys(n.node.metadata) for n in li_nodes}
    assert lc == li and set(lc["p1"]) == set(GATE_METADATA_KEYS) and lc["p1"]["seakr_gate_reason"] == "uncertain"
    assert all(type(lc["p1"][k]) is type(li["p1"][k]) for k in GATE_METADATA_KEYS)

    def respond(prompt, config):  # p3 is unscorable: the model writes nothing after reading it
        return Reply("", 0.0) if "text of p3" in prompt and ". " in config.stop else eiffel(prompt, config)

    lc_docs = LangChainReranker(llm=ScriptedBackend(respond), config=CONFIG, top_n=3).compress_documents(
        ListRetriever().docs, QUESTION
    )
    li_nodes = LlamaIndexReranker(llm=llm_for(respond), config=CONFIG, top_n=3).postprocess_nodes(
        make_nodes(), query_str=QUESTION
    )
    assert [d.id for d in lc_docs] == [n.node.node_id for n in li_nodes] == ["p2", "p1", "p3"]
    for doc, node in zip(lc_docs, li_nodes, strict=True):
        assert _seakr_keys(doc.metadata) == _seakr_keys(node.node.metadata)
        assert set(_seakr_keys(doc.metadata)) == set(CANDIDATE_METADATA_KEYS)
        assert doc.metadata["relevance_score"] == node.score  # the frameworks' own score, one convention
    assert lc_docs[0].metadata["seakr_chosen"] is True and lc_docs[1].metadata["seakr_chosen"] is False
    assert lc_docs[2].metadata["seakr_uncertainty"] is None and li_nodes[2].score is None  # unscorable: last
    core = SeaKR(ScriptedBackend(respond), None, CONFIG).rerank(QUESTION, [passage(f"p{i}") for i in (1, 2, 3)])
    assert [CandidateScore.from_candidate(c).to_metadata() for c in core] == [_seakr_keys(d.metadata) for d in lc_docs]


# ----------------------------------------------------------------------------------------------- event names
def test_every_core_event_has_one_name_in_each_framework():
    defined = {c for c in vars(events).values() if isinstance(c, type) and issubclass(c, events.SeaKREvent)}
    assert defined - {events.SeaKREvent} == set(events.EVENT_TYPES)
    table = events.__doc__
    for event in events.EVENT_TYPES:
        kind = re.sub(r"(?<!^)(?=[A-Z])", "_", event.__name__).lower()
        assert event.kind == kind and events.langchain_event_name(event) == f"seakr_{kind}"
        li_name = events.llamaindex_event_name(event)
        assert li_name == f"{event.__name__}Event" and hasattr(llamaindex_seakr, li_name)
        assert li_name in llamaindex_seakr.__all__
        assert all(name in table for name in (event.__name__, kind, f"seakr_{kind}", li_name))


def test_events_carry_the_new_names():
    seakr = SeaKR(ScriptedBackend(eiffel), FakeRetriever(default=[passage(f"p{i}") for i in (1, 2, 3)]), CONFIG)
    found = list(seakr.iter_events([QUESTION]))
    reranked = next(e for e in found if isinstance(e, events.PassagesReranked))
    assert reranked.chosen_passage_id == "p2" and reranked.to_dict()["chosen_passage_id"] == "p2"
    assert [e.kind for e in found][-2:] == ["answer_chosen", "question_answered"]
    result = found[-1].result
    assert found[-2].choice == FinalChoice.from_finals(result.finals, result.strategy, result.answer)
