"""LlamaIndex on one `seakr serve` (SmolLM2, CPU): `OpenAILike` answers, SeaKR's components use `base_url=`.

Runs the app of ``bench/three_apps/llamaindex_app.py`` (the example docs/serving.md shows) against a real server
with an API key: a stock ``RetrieverQueryEngine`` whose LLM is ``OpenAILike`` on the server's OpenAI routes with
``SelfAwareReranker`` choosing its passage, then ``SeaKRQueryEngine``; SeaKR's decisions must reach LlamaIndex's
instrumentation.
"""

from __future__ import annotations

import pytest

from tests.test_serving import KEY, _start, _stop

pytestmark = [pytest.mark.slow, pytest.mark.vllm]


def _app():
    """The app, imported once LlamaIndex is known to be installed (it imports LlamaIndex at its top)."""
    from bench.three_apps import llamaindex_app

    return llamaindex_app


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    pytest.importorskip("llama_index.llms.openai_like", reason="pip install 'seakr-integrations[llamaindex]'")
    # LlamaIndex's compact-and-refine synthesizer keeps 500 tokens of padding: the module's 512-token context is too
    # small for it (vLLM takes the last --max-model-len)
    tmp = tmp_path_factory.mktemp("serve-llamaindex")
    process, url = _start(tmp, "--api-key", KEY, "--max-model-len", "2048")
    yield url
    _stop(process)


def test_openai_like_answers_while_seakr_decides_on_the_same_server(server):
    from seakr_integrations import SeaKRConfig

    config = SeaKRConfig.light(k=4, max_tokens=24, num_exemplars=2)
    out = _app().run(server, api_key=KEY, config=config)
    print(out)

    plain = out["openai_like"]
    assert plain["answer"] and plain["answer"] != "Empty Response"
    # the re-ranker read all three nodes on the server and kept one; the engine answered from that one
    (reranked,) = plain["rerank_events"]
    assert len(reranked) == 1 and plain["kept"] == reranked and reranked[0]["title"]

    looped = out["seakr_query_engine"]
    kinds = [p["kind"] for p in looped["phases"]]
    assert "step_assessed" in kinds and "answer_chosen" in kinds and kinds[-1] == "question_answered"
    decisions = [p["decision"] for p in looped["phases"] if p["kind"] == "step_assessed"]
    assert set(decisions) <= {"answer", "accept", "retrieve"}
    assert ("retrieve" in decisions) == ("passages_reranked" in kinds)
    assert looped["answer"] and looped["phases"][-1]["answer"] == looped["answer"]
    assert looped["strategy"] == looped["phases"][-1]["strategy"]
