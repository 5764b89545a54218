"""The frameworks' own conventions, as a LangChain or LlamaIndex user expects them: one spelling of back-end and
model in both adapters, defaults and estimators from the core, one loaded model per resolved model, ``SeaKRConfig``
and ``__version__`` importable from every package, ``SeaKRChain`` streaming what ``invoke`` returns with its chat
model visible as a chat model, typed schemas, short reprs and a retriever binding that follows the retriever.

Offline and fast: the scripted back-end of ``fakes.py`` and a counting stand-in for the model loader."""

from __future__ import annotations

import importlib.metadata
import json
from pathlib import Path
from typing import Any

import pytest
from fakes import FakeRetriever, Reply, ScriptedBackend
from langchain_core.documents import Document
from langchain_core.language_models import FakeListChatModel
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import RunnablePassthrough
from pydantic import ValidationError
from test_langchain_adapters import ListRetriever
from test_reasoner import CONFIG
from test_reasoner_components import eiffel

import langchain_seakr
import llamaindex_seakr
import seakr_integrations
from langchain_seakr import ChatSeaKR, SeaKRChain, UncertaintyGatedRetriever
from langchain_seakr import SeaKRLLM as LangChainSeaKRLLM
from llamaindex_seakr import SeaKRLLM as LlamaIndexSeaKRLLM
from seakr_integrations.backends import loading
from seakr_integrations.models import DEFAULT_MODEL
from seakr_integrations.params import SamplingConfig
from seakr_integrations.reasoning.config import SeaKRConfig
from seakr_integrations.uncertainty.prompt import PROBE_SUFFIX
from seakr_integrations.uncertainty.registry import estimator_names

QUESTION = "Which country is the Eiffel Tower in?"
SAMPLING_FIELDS = ("k", "temperature", "top_k", "top_p", "max_tokens", "seed", "layer", "source")


@pytest.fixture
def counting_loader(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[tuple[str, str]]:
    """``load_backend`` replaced by a stand-in that records each load and returns a scripted back-end; every
    packaged model name resolves to one directory per canonical name, as ``resolve_model`` does."""
    loads: list[tuple[str, str]] = []
    real_resolve = loading.resolve_model

    def resolve(model: Any) -> Path:
        packaged = loading.packaged_model(str(model))
        if packaged is None:
            return real_resolve(model)
        target = tmp_path / "models" / packaged.name
        target.mkdir(parents=True, exist_ok=True)
        return target

    def load(kind: str, model: str, **options: Any) -> ScriptedBackend:
        loads.append((kind, model))
        backend = ScriptedBackend(eiffel)
        backend.model_name = model
        return backend

    monkeypatch.setattr(loading, "_shared", {})
    monkeypatch.setattr(loading, "resolve_model", resolve)
    monkeypatch.setattr(loading, "load_backend", load)
    return loads


# ------------------------------------------------------------------------------------ back-end and model names
def test_both_adapters_take_backend_and_model_the_same_way(counting_loader):
    chat = ChatSeaKR(backend="vllm", model="smollm2")
    assert chat.backend == "vllm" and chat.model == "smollm2" and counting_loader == []  # loaded on first use
    assert chat.self_aware_backend.model_name == "smollm2-135m-instruct"
    llama = LlamaIndexSeaKRLLM(backend="vllm", model="smollm2")
    assert counting_loader == [("vllm", "smollm2-135m-instruct")]  # one model for both, under its own name
    assert llama.model_name == chat.self_aware_backend.model_name == "smollm2-135m-instruct"
    backend = ScriptedBackend(eiffel)
    assert ChatSeaKR(backend=backend).model == LlamaIndexSeaKRLLM(backend=backend).model_name == "scripted"
    for bad in ("tgi", "HF"):
        with pytest.raises(ValidationError, match="choose one of"):
            ChatSeaKR(backend=bad)
        with pytest.raises(ValueError, match="choose one of"):
            LlamaIndexSeaKRLLM(backend=bad)


def test_defaults_come_from_the_core():
    sampling, loop = SamplingConfig(), SeaKRConfig()
    for cls in (ChatSeaKR, LangChainSeaKRLLM, LlamaIndexSeaKRLLM):
        fields = cls.model_fields
        for name in SAMPLING_FIELDS:
            assert fields[name].default == getattr(sampling, name), (cls, name)
        assert fields["estimator"].default == loop.estimator and fields["alpha"].default == loop.alpha
    assert ChatSeaKR.model_fields["model"].default == DEFAULT_MODEL
    assert LlamaIndexSeaKRLLM.__init__.__defaults__[1] == DEFAULT_MODEL


@pytest.mark.parametrize("estimator", estimator_names())
def test_every_estimator_the_loop_accepts_runs_in_both_model_classes(estimator):
    def respond(prompt: str, config: SamplingConfig) -> Reply:
        return Reply("Yes" if prompt.endswith(PROBE_SUFFIX) else "Paris", 0.3)

    class WithLogits(ScriptedBackend):
        supports_logits = True

        def _generate(self, prompts, prompt_ids, configs, layer):
            outputs = super()._generate(prompts, prompt_ids, configs, layer)
            for o in outputs:
                o.greedy.logit_lse = [1.0] * len(o.greedy.token_ids)
            return outputs

    backend = WithLogits(respond)
    chat = ChatSeaKR(backend=backend, k=4, estimator=estimator)
    reply = chat.invoke("Capital of France?")
    uncertainty = reply.response_metadata["uncertainty"]
    assert reply.content == "Paris" and uncertainty["estimator"] == estimator
    llama = LlamaIndexSeaKRLLM(backend=backend, k=4, estimator=estimator, chat_template=False)
    response = llama.complete("Capital of France is")
    assert response.text == "Paris" and response.additional_kwargs["uncertainty"]["estimator"] == estimator
    assert response.additional_kwargs["uncertainty"]["value"] == pytest.approx(uncertainty["value"])
    probes = [p for p in backend.prompts if p.endswith(PROBE_SUFFIX)]
    assert len(probes) == (2 if estimator == "prompt" else 0)  # "prompt" asks the model after each call


def test_unknown_estimators_are_refused_with_the_choices_in_both():
    with pytest.raises(ValidationError, match="choose one of eigenscore, .*prompt"):
        ChatSeaKR(backend=ScriptedBackend(eiffel), estimator="vibes")
    with pytest.raises(ValueError, match="choose one of eigenscore, .*prompt"):
        LlamaIndexSeaKRLLM(backend=ScriptedBackend(eiffel), estimator="vibes")


# ------------------------------------------------------------------------------------------ one loaded model
def test_one_loaded_model_per_resolved_model_whatever_names_it(counting_loader):
    chat = ChatSeaKR(model="smollm2")
    chain = SeaKRChain(retriever=ListRetriever())  # no llm: the default model
    llama = LlamaIndexSeaKRLLM(model="SmolLM2-135M-Instruct")
    assert chat.self_aware_backend is chain.backend is llama.backend
    assert counting_loader == [("hf", DEFAULT_MODEL)]
    assert ChatSeaKR(backend="vllm", model="smollm2").self_aware_backend is not chat.self_aware_backend  # other kind
    assert counting_loader == [("hf", DEFAULT_MODEL), ("vllm", DEFAULT_MODEL)]


def test_a_model_directory_loads_once_whatever_path_spells_it(counting_loader, tmp_path):
    model_dir = tmp_path / "my-model"
    model_dir.mkdir()
    (model_dir / "config.json").write_text("{}")
    (tmp_path / "link").symlink_to(model_dir)
    spellings = [str(model_dir), f"{model_dir}/", str(tmp_path / "link"), str(model_dir / ".." / "my-model")]
    backends = {id(loading.shared_backend("hf", s)) for s in spellings}
    assert len(backends) == 1 and len(counting_loader) == 1


# ---------------------------------------------------------------------------------------------- imports
def test_config_and_version_are_importable_from_every_package():
    assert langchain_seakr.SeaKRConfig is llamaindex_seakr.SeaKRConfig is SeaKRConfig
    expected = importlib.metadata.version("seakr-integrations")
    assert seakr_integrations.__version__ == langchain_seakr.__version__ == llamaindex_seakr.__version__ == expected


# ------------------------------------------------------------------------------------------- SeaKRChain I/O
def chain(**kwargs: Any) -> SeaKRChain:
    kwargs.setdefault("llm", ScriptedBackend(eiffel))
    kwargs.setdefault("retriever", ListRetriever())
    return SeaKRChain(config=CONFIG, **kwargs)


def test_stream_yields_what_invoke_returns_in_pieces():
    seakr_chain = chain()
    answer = seakr_chain.invoke(QUESTION)
    pieces = list(seakr_chain.stream(QUESTION))
    assert pieces and all(isinstance(p, str) for p in pieces) and "".join(pieces) == answer == "France"
    traced = chain(return_trace=True)
    whole = traced.invoke(QUESTION)
    chunks = list(traced.stream(QUESTION))
    assert len(chunks) >= 2 and all(isinstance(c, dict) for c in chunks)
    joined = chunks[0]
    for c in chunks[1:]:
        joined = joined + c  # AddableDict: how LangChain itself adds dict chunks
    assert set(joined) == set(whole) == {"answer", "documents", "strategy", "trace"}
    assert joined["answer"] == whole["answer"] and joined["strategy"] == whole["strategy"]
    assert [d.id for d in joined["documents"]] == [d.id for d in whole["documents"]]
    assert json.dumps(joined["trace"], sort_keys=True) == json.dumps(whole["trace"], sort_keys=True)


async def test_astream_yields_the_same_pieces_as_stream():
    seakr_chain = chain()
    pieces = [p async for p in seakr_chain.astream(QUESTION)]
    assert "".join(pieces) == seakr_chain.invoke(QUESTION)


def _summary(events: list[dict[str, Any]], root: str) -> dict[str, Any]:
    kinds = [e["event"] for e in events]
    streamed = [e["data"]["chunk"] for e in events if e["event"] == "on_chain_stream" and e["name"] == root]
    return {
        "first": (kinds[0], events[0]["name"]),
        "last": (kinds[-1], events[-1]["name"]),
        "output": events[-1]["data"].get("output"),
        "streamed": streamed,
        "last_stream_before_end": max(i for i, k in enumerate(kinds) if k == "on_chain_stream") < len(kinds) - 1,
        "model": sorted({k for k in kinds if k.startswith(("on_chat_model", "on_llm"))}),
    }


async def test_astream_events_match_a_langchain_chain_of_its_own_pieces():
    """``SeaKRChain`` with a ``ChatSeaKR`` against ``retriever | prompt | chat model | parser`` built from
    langchain_core's own pieces: the same event structure."""
    prompt = ChatPromptTemplate.from_template("Context: {context}\nQuestion: {question}")
    reference = (
        {
            "context": ListRetriever() | (lambda docs: "\n".join(d.page_content for d in docs)),
            "question": RunnablePassthrough(),
        }
        | prompt
        | FakeListChatModel(responses=["France"])
        | StrOutputParser()
    ).with_config(run_name="Reference")
    ours = chain(llm=ChatSeaKR(backend=ScriptedBackend(eiffel)))
    expected = {"Reference": reference.invoke(QUESTION), "SeaKRChain": ours.invoke(QUESTION)}
    for runnable, root in ((reference, "Reference"), (ours, "SeaKRChain")):
        events = [e async for e in runnable.astream_events(QUESTION, version="v2")]
        summary = _summary(events, root)
        assert summary["first"] == ("on_chain_start", root)
        assert summary["last"] == ("on_chain_end", root)
        assert summary["output"] == expected[root] == "".join(summary["streamed"])
        assert summary["last_stream_before_end"]
        assert summary["model"] == ["on_chat_model_end", "on_chat_model_start", "on_chat_model_stream"]
    chat_starts = [e for e in events if e["event"] == "on_chat_model_start"]
    assert chat_starts and all(e["name"] == "ChatSeaKR" for e in chat_starts)
    ends = [e for e in events if e["event"] == "on_chat_model_end"]
    assert all("uncertainty" in e["data"]["output"].response_metadata for e in ends)
    assert any(e["event"] == "on_custom_event" for e in events)  # the decisions
    assert any(e["event"] == "on_retriever_end" for e in events)


async def test_a_bare_backend_reports_completion_runs():
    events = [e async for e in chain().astream_events(QUESTION, version="v2")]
    kinds = {e["event"] for e in events}
    assert "on_llm_end" in kinds and not any(k.startswith("on_chat_model") for k in kinds)
    assert events[-1]["event"] == "on_chain_end" and events[-1]["data"]["output"] == "France"


def test_schemas_say_what_the_chain_takes_and_gives():
    plain, traced = chain(), chain(return_trace=True)
    schema = plain.get_input_schema().model_json_schema()
    assert json.dumps(schema).count('"question"') >= 1 and "string" in json.dumps(schema)
    model = plain.get_input_schema()
    assert model.model_validate(QUESTION).root == QUESTION
    assert model.model_validate({"input": QUESTION}).root.question == QUESTION  # LangChain's own key works too
    assert plain.invoke({"input": QUESTION}) == "France"
    assert plain.get_output_schema().model_json_schema()["type"] == "string"
    out = traced.get_output_schema().model_json_schema()
    if "$ref" in out:  # the TypedDict as a definition
        out = out["$defs"][out["$ref"].rsplit("/", 1)[1]]
    assert set(out["required"]) == {"answer", "documents", "strategy", "trace"}


def test_reprs_are_short_and_show_the_essentials():
    backend = ScriptedBackend(eiffel)
    big = ListRetriever(docs=[Document("x" * 10_000, id=str(i)) for i in range(50)])
    text = repr(SeaKRChain(llm=backend, retriever=big, config=SeaKRConfig(delta=-3.0)))
    assert len(text) < 200, text
    assert text.startswith("SeaKRChain(") and "model='scripted'" in text and "ListRetriever" in text
    assert "delta=-3.0" in text and "base_stops" not in text and "xxxx" not in text
    assert "config" not in repr(SeaKRChain(llm=backend, retriever=big))  # all defaults: nothing to show
    assert "return_trace=True" in repr(SeaKRChain(llm=backend, retriever=big, return_trace=True))
    gate = repr(UncertaintyGatedRetriever(retriever=big, llm=backend))  # every SeaKR component
    assert len(gate) < 200 and "ListRetriever(...)" in gate, gate
    default = repr(SeaKRChain(retriever=big))  # describes the default model without loading it
    assert f"model='{DEFAULT_MODEL}'" in default and "backend='hf'" in default


# ---------------------------------------------------------------------------------------- retriever binding
def test_each_retriever_and_config_gets_its_own_loop():
    """A LangChain user replaces a retriever or a config by assignment or ``model_copy``; the loop must follow."""
    seakr_chain = chain()
    core_first, core_second = FakeRetriever(), FakeRetriever()
    loop = seakr_chain.seakr(core_first)
    assert seakr_chain.seakr(core_first) is loop  # unchanged inputs keep their loop
    assert seakr_chain.seakr(core_second).retriever is core_second  # before: the first retriever, silently
    first, second = ListRetriever(queries=[]), ListRetriever(queries=[])
    seakr_chain.invoke(QUESTION)
    seakr_chain.retriever = first
    seakr_chain.invoke(QUESTION)
    assert first.queries == ["Eiffel Tower stands"]
    copy = seakr_chain.model_copy(update={"retriever": second})
    copy.invoke(QUESTION)
    assert second.queries == ["Eiffel Tower stands"] and len(first.queries) == 1
    seakr_chain.config = CONFIG.with_(retrieve="never")  # before: the first config's loop kept retrieving
    seakr_chain.invoke(QUESTION)
    assert len(first.queries) == 1
