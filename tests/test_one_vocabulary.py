"""One question through the core, LangChain's ``SeaKRChain`` and LlamaIndex's ``SeaKRQueryEngine``: the same
decisions, under the same names, with the same values, and each framework's events named after the core's."""

from __future__ import annotations

from fakes import FakeRetriever, ScriptedBackend, passage
from langchain_core.callbacks import BaseCallbackHandler
from llamaindex_fakes import CONFIG, QUESTION, NodeListRetriever, eiffel
from test_langchain_adapters import ListRetriever

from langchain_seakr import ChatSeaKR, SeaKRChain
from llamaindex_seakr import SeaKRLLM, SeaKRQueryEngine
from seakr_integrations.reasoning import SeaKR, SeaKRResult
from seakr_integrations.reasoning.events import langchain_event_name


def decisions(trace: dict) -> dict:
    """Every decision of a trace, by the names the trace gives them."""
    result = SeaKRResult.from_dict(trace)
    return {
        "steps": [
            {
                "decision": s.decision,
                "uncertainty": s.uncertainty.value if s.uncertainty else None,
                "query": s.query,
                "chosen_passage_id": s.chosen_passage_id,
                "candidates": [(c.passage.id, c.rank, c.uncertainty.value, c.chosen) for c in s.candidates],
                "stop": s.stop,
            }
            for s in result.steps
        ],
        "finals": {name: (f.answer, f.uncertainty.value) for name, f in result.finals.items()},
        "strategy": result.strategy,
        "answer": result.answer,
        "stop_reason": result.stop_reason,
        "passages": [p.id for p in result.passages],
    }


class CustomEvents(BaseCallbackHandler):
    def __init__(self) -> None:
        self.names: list[str] = []

    def on_custom_event(self, name, data, **kwargs) -> None:
        self.names.append(name)


def test_the_same_question_gets_the_same_decisions_in_core_langchain_and_llamaindex():
    passages = [passage(f"p{i}") for i in (1, 2, 3)]
    core = SeaKR(ScriptedBackend(eiffel), FakeRetriever(default=passages), CONFIG)
    core_events = list(core.iter_events([QUESTION]))
    core_trace = core_events[-1].result.to_dict()

    listener = CustomEvents()
    chain = SeaKRChain(
        retriever=ListRetriever(), llm=ChatSeaKR(backend=ScriptedBackend(eiffel)), config=CONFIG, return_trace=True
    )
    lc_trace = chain.invoke(QUESTION, config={"callbacks": [listener]})["trace"]

    engine = SeaKRQueryEngine(NodeListRetriever(), SeaKRLLM(backend=ScriptedBackend(eiffel)), CONFIG)
    li_trace = engine.query(QUESTION).metadata["trace"]

    expected = decisions(core_trace)
    assert expected["steps"] and any(s["chosen_passage_id"] for s in expected["steps"])  # it retrieved and chose
    assert decisions(lc_trace) == expected
    assert decisions(li_trace) == expected
    assert lc_trace["schema_version"] == li_trace["schema_version"] == core_trace["schema_version"]

    # LangChain's custom events are the core's phases, named seakr_<kind>, in the order the core emitted them
    new_names = [n for n in listener.names if n in {langchain_event_name(type(e)) for e in core_events}]
    assert new_names == [langchain_event_name(type(e)) for e in core_events]


def test_both_adapters_attach_the_same_uncertainty_record():
    from fakes import Reply

    def respond(prompt, config):  # "nothing" makes every sample empty: no uncertainty can be computed
        return Reply("" if "nothing" in prompt else "Paris", spread=0.5)

    for prompt, finite in (("Say Paris", True), ("Say nothing", False)):
        lc = ChatSeaKR(backend=ScriptedBackend(respond), k=4, max_tokens=5).invoke(prompt)
        li = SeaKRLLM(backend=ScriptedBackend(respond), k=4, max_tokens=5).complete(prompt)
        lc_u, li_u = lc.response_metadata["uncertainty"], li.additional_kwargs["uncertainty"]
        assert lc_u == li_u
        assert (lc_u["value"] is not None) is finite and (finite or lc_u["note"])
