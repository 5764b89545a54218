"""``SeaKR.gather``: the loop of ``SeaKR.answer`` without its final answer (what an agent's model reads), with the
scripted back-end of ``fakes.py``."""

import json

import pytest
from fakes import FakeRetriever, ScriptedBackend
from test_reasoner import CONFIG
from test_reasoner_components import DOCS, eiffel

from seakr_integrations.reasoning import SeaKR, SeaKRConfig
from seakr_integrations.reasoning.events import KnowledgeGathered, Observer, PassagesReranked, StepFinished

QUESTION = "Which country is the Eiffel Tower in?"


def seakr(config=CONFIG):
    return SeaKR(ScriptedBackend(eiffel), FakeRetriever(default=DOCS), config)


def test_gather_keeps_what_answer_keeps_and_asks_for_no_final_answer():
    answered = seakr().answer(QUESTION)
    gathering = seakr()
    gathered = gathering.gather(QUESTION)
    assert [p.id for p in gathered.passages] == [p.id for p in answered.passages] == ["p2"]
    assert [s.to_dict() for s in gathered.steps] == [s.to_dict() for s in answered.steps]
    assert gathered.stop_reason == answered.stop_reason == "answer found"
    assert gathered.rationale == ["It is in France", "So the answer is France"]
    # the finals are the answer's last batch: gathering stops before it
    assert len(gathering.backend.batches) == 3 and gathered.lm_calls < answered.lm_calls
    assert gathered.searches == answered.searches == 1
    assert gathered.generated_tokens < answered.generated_tokens
    plain = json.loads(json.dumps(gathered.to_dict(), allow_nan=False))
    assert plain["passages"][0]["id"] == "p2" and plain["stop_reason"] == "answer found"


def test_gather_many_runs_together_and_reports_each_questions_events():
    class Seen(Observer):
        def __init__(self):
            self.events = []

        def on_event(self, event):
            self.events.append(type(event))

    observers = [Seen(), Seen()]
    out = seakr().gather_many([QUESTION, QUESTION + " (again)"], observers=observers)
    assert [[p.id for p in g.passages] for g in out] == [["p2"], ["p2"]]
    for seen in observers:
        assert PassagesReranked in seen.events and seen.events[-2:] == [StepFinished, KnowledgeGathered]


def test_gather_events_stream_the_phases_and_end_with_the_knowledge():
    events = list(seakr().gather_events([QUESTION]))
    assert [e.kind for e in events][-2:] == ["step_finished", "knowledge_gathered"]
    data = json.loads(json.dumps(events[-1].to_dict(), allow_nan=False))
    assert data["kind"] == "knowledge_gathered" and data["gathered"]["passages"][0]["id"] == "p2"


def test_gather_refuses_single_hop_and_a_missing_retriever():
    with pytest.raises(ValueError, match="mode is 'single_hop'.*assess\\(\\) and rerank\\(\\)"):
        seakr(SeaKRConfig.paper(k=4, num_exemplars=0, max_tokens=10, delta=-6.0, mode="single_hop")).gather(QUESTION)
    with pytest.raises(ValueError, match="no retriever"):
        SeaKR(ScriptedBackend(eiffel), None, CONFIG).gather(QUESTION)
    with pytest.raises(ValueError, match="empty"):
        seakr().gather("  ")
