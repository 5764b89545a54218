"""One model object for both frameworks (``seakr_integrations.self_aware_model``): every SeaKR component samples as
its model does unless its config changes a setting, both gates return their decision, and a repr names the model
that answers.  Offline: the scripted back-end of ``fakes.py``."""

from __future__ import annotations

import pytest
from fakes import FakeRetriever, Reply, ScriptedBackend, passage
from test_langchain_adapters import ListRetriever

from langchain_seakr import ChatSeaKR, SeaKRChain, UncertaintyGatedRetriever
from llamaindex_seakr import PassageRetriever, SeaKRLLM, SeaKRQueryEngine, SelfAwareReranker
from llamaindex_seakr import UncertaintyGatedRetriever as LlamaGate
from seakr_integrations.reasoning.config import SeaKRConfig
from seakr_integrations.self_aware_model import SelfAwareModel

QUESTION = "Which country is the Eiffel Tower in?"


def backend() -> ScriptedBackend:
    return ScriptedBackend(lambda prompt, config: Reply("So the answer is France."))


def test_the_loop_samples_as_its_model_unless_the_config_says_otherwise():
    spec = SelfAwareModel(backend=backend(), sampling=SelfAwareModel().sampling.with_(k=6, max_tokens=12))
    assert (spec.loop_config().k, spec.loop_config().max_tokens) == (6, 12)
    changed = spec.loop_config(SeaKRConfig(k=4, delta=-1.0))
    assert (changed.k, changed.max_tokens, changed.delta) == (4, 12, -1.0)  # config's change wins, the rest stays

    chat = ChatSeaKR(backend=backend(), k=6, max_tokens=12)
    chain = SeaKRChain(retriever=ListRetriever(docs=[]), llm=chat)
    assert (chain.loop_config.k, chain.loop_config.max_tokens) == (6, 12)
    assert SeaKRChain(retriever=ListRetriever(docs=[]), llm=chat, config=SeaKRConfig(k=4)).loop_config.k == 4

    llm = SeaKRLLM(backend=backend(), k=6, max_tokens=12)
    retriever = PassageRetriever(FakeRetriever(default=[passage("p1")]), top_k=1)
    for component in (SeaKRQueryEngine(retriever, llm), SelfAwareReranker(llm), LlamaGate(retriever, llm)):
        assert (component.config.k, component.config.max_tokens) == (6, 12)
    assert SeaKRQueryEngine(retriever, llm, SeaKRConfig(k=4)).config.k == 4


def test_the_loop_is_built_on_first_use_and_kept_while_nothing_changes():
    llm = SeaKRLLM(backend=backend(), k=4, max_tokens=8)
    engine = SeaKRQueryEngine(PassageRetriever(FakeRetriever(default=[passage("p1")]), top_k=1), llm)
    assert engine.seakr is engine.seakr
    llm.k = 6  # the component follows its model
    assert engine.seakr.config.k == 6


def test_both_gates_return_and_keep_their_decision():
    chat = ChatSeaKR(backend=backend(), k=4, max_tokens=8)
    gate = UncertaintyGatedRetriever(retriever=ListRetriever(docs=[]), llm=chat, config=SeaKRConfig(delta=100.0))
    decision = gate.decide(QUESTION)
    assert gate.last_decision == decision and decision.query == QUESTION

    llm = SeaKRLLM(backend=backend(), k=4, max_tokens=8)
    llama = LlamaGate(PassageRetriever(FakeRetriever(default=[passage("p1")]), top_k=1), llm, SeaKRConfig(delta=100.0))
    decided = llama.decide(QUESTION)
    assert llama.last_decision is decided and decided.reason.value == decision.reason.value


def test_a_repr_names_the_model_that_answers_never_a_default_or_the_key():
    spec = SelfAwareModel(base_url="http://127.0.0.1:9", api_key="sk-secret")
    assert spec.model is None and "sk-secret" not in repr(spec)
    assert spec.describe() == {"model": "(the server's)", "backend": "server", "base_url": "http://127.0.0.1:9"}
    chain = SeaKRChain(retriever=ListRetriever(docs=[]), llm=ChatSeaKR(base_url="http://127.0.0.1:9"))
    assert "smollm2" not in repr(chain) and "127.0.0.1:9" in repr(chain)
    given = SelfAwareModel(backend=backend())
    assert given.describe()["model"] == "scripted"


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"backend": "tgi"}, "choose one of"),
        ({"model": "no-such-model"}, "unknown model"),
        ({"api_key": "sk-x"}, "base_url"),
        ({"estimator": "vibes"}, "estimator"),
        ({"alpha": 0.0}, "positive"),
    ],
)
def test_a_bad_model_description_is_refused_with_what_to_pass(changes, message):
    with pytest.raises(ValueError, match=message):
        SelfAwareModel(**changes)
    with pytest.raises(TypeError, match="not a self-aware back-end"):
        SelfAwareModel(backend=object())
