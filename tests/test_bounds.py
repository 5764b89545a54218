"""Upper bounds on the sampling settings (issue 49): ``k`` and ``max_tokens`` above their caps, or a
``max_tokens`` the model's context cannot hold, are refused at once with the limit and what to pass, wherever the
settings are given (one check, in ``SamplingConfig``)."""

from __future__ import annotations

import pytest
from fakes import FakeRetriever, ScriptedBackend, passage
from llamaindex_fakes import CONFIG, eiffel

from langchain_seakr import ChatSeaKR
from llamaindex_seakr import SeaKRLLM
from seakr_integrations.params import MAX_K, MAX_TOKENS, SamplingConfig
from seakr_integrations.reasoning import SeaKR, SeaKRConfig

TOO_MANY_K = r"k=1,000,000,000: at most 256 samples per call.* pass a k from 2 to 256"
TOO_MANY_TOKENS = r"max_tokens=1,000,000,000: at most 32,768 tokens per continuation.* pass a smaller max_tokens"


def test_the_caps_are_documented_constants():
    assert (MAX_K, MAX_TOKENS) == (256, 32_768)
    assert SamplingConfig(k=MAX_K, max_tokens=MAX_TOKENS).k == MAX_K  # the caps themselves are allowed
    for bad in ({"k": MAX_K + 1}, {"max_tokens": MAX_TOKENS + 1}):
        with pytest.raises(ValueError, match="at most"):
            SamplingConfig(**bad)


@pytest.mark.parametrize(("field", "message"), [("k", TOO_MANY_K), ("max_tokens", TOO_MANY_TOKENS)])
def test_a_huge_setting_is_refused_everywhere_it_is_given(field, message):
    with pytest.raises(ValueError, match=message):
        SeaKRConfig(**{field: 10**9})
    with pytest.raises(ValueError, match=message):
        SamplingConfig(**{field: 10**9})
    with pytest.raises(ValueError, match=message):
        ChatSeaKR(backend=ScriptedBackend(eiffel), **{field: 10**9})
    with pytest.raises(ValueError, match=message):
        SeaKRLLM(backend=ScriptedBackend(eiffel), **{field: 10**9})


def test_the_cli_refuses_them_before_loading_a_model(capsys, monkeypatch):
    from seakr_integrations import cli

    def no_model(args):
        raise AssertionError("the model was loaded for settings that should be refused first")

    monkeypatch.setattr("seakr_integrations.cli.backend.build_backend", no_model)
    for option, message in (("-k", "at most 256 samples"), ("--max-tokens", "at most 32,768 tokens")):
        assert cli.main(["ask", "Who wrote Hamlet?", option, str(10**9)]) == 2
        assert message in capsys.readouterr().err


def test_max_tokens_larger_than_the_context_says_the_context_not_a_negative_room():
    small = ScriptedBackend(eiffel, max_context=2048)
    with pytest.raises(
        ValueError, match=r"max_tokens=4,096 leaves no room for a prompt in scripted's context of 2,048"
    ) as raised:
        SeaKR(small, FakeRetriever(default=[passage("p1")]), CONFIG.with_(max_tokens=4096))
    assert "-" not in str(raised.value).split("tokens")[0] and "pass a max_tokens well below 2,048" in str(raised.value)
    with pytest.raises(ValueError, match=r"max_tokens=4,096 leaves no room for a prompt in scripted's context"):
        small.generate(["Hello"], SamplingConfig(k=2, max_tokens=4096))
