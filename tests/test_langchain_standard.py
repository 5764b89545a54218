"""LangChain's standard test suites (langchain-tests) on the real thing: SmolLM2-135M-Instruct on CPU through
transformers, and the embedded BM25 index over the bundled HotpotQA/2Wiki passages.  Offline.

Skips come from the suites themselves and print their reason: tool calling, structured output, JSON mode and
non-text inputs are features ChatSeaKR does not claim (its capability flags are honest), and the timing test needs
VCR cassettes, which a local model has no use for.
"""

from __future__ import annotations

from typing import Any

import pytest
from langchain_tests.integration_tests import ChatModelIntegrationTests, RetrieversIntegrationTests
from langchain_tests.unit_tests import ChatModelUnitTests

from langchain_seakr import ChatSeaKR, PassageIndexRetriever, UncertaintyGatedRetriever
from seakr_integrations.models import DEFAULT_MODEL


def _smollm2():
    from seakr_integrations.backends.loading import shared_backend

    return shared_backend("hf", DEFAULT_MODEL)


class TestChatSeaKRUnit(ChatModelUnitTests):
    """Offline construction checks: the model is named, not loaded (ChatSeaKR loads it on first use)."""

    @property
    def chat_model_class(self) -> type[ChatSeaKR]:
        return ChatSeaKR

    @property
    def chat_model_params(self) -> dict[str, Any]:
        return {"model": DEFAULT_MODEL, "k": 4}

    @property
    def standard_chat_model_params(self) -> dict[str, Any]:
        # A local model has no API key, request timeout or retry policy; ChatSeaKR rejects unknown arguments
        # (extra="forbid") instead of dropping them silently, so only the standard parameters it honours are sent.
        return {"temperature": 0, "max_tokens": 100, "stop": []}


@pytest.mark.slow
class TestChatSeaKRIntegration(ChatModelIntegrationTests):
    """The full chat-model suite against SmolLM2 on CPU (k=4 samples and 24 tokens keep each call ~2 s)."""

    @property
    def chat_model_class(self) -> type[ChatSeaKR]:
        return ChatSeaKR

    @property
    def chat_model_params(self) -> dict[str, Any]:
        return {"backend": _smollm2(), "k": 4}

    @property
    def standard_chat_model_params(self) -> dict[str, Any]:
        return {"temperature": 0, "max_tokens": 24, "stop": []}


@pytest.mark.slow
class TestPassageIndexRetriever(RetrieversIntegrationTests):
    """The embedded tantivy BM25 index over the bundled corpus as a LangChain retriever."""

    @property
    def retriever_constructor(self) -> type[PassageIndexRetriever]:
        return PassageIndexRetriever

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        from seakr_integrations.demo import demo_index

        return {"index": demo_index(progress=False)}

    @property
    def retriever_query_example(self) -> str:
        return "Santa Sangre film director"


@pytest.mark.slow
class TestUncertaintyGatedRetrieverAlwaysRetrieving(RetrieversIntegrationTests):
    """The gate in the configuration that always retrieves (the suite demands exactly k documents)."""

    @property
    def retriever_constructor(self) -> type[UncertaintyGatedRetriever]:
        return UncertaintyGatedRetriever

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        from seakr_integrations.demo import demo_index

        return {
            "retriever": PassageIndexRetriever(index=demo_index(progress=False), k=10),
            "llm": _smollm2(),
            "always_retrieve": True,
        }

    @property
    def retriever_query_example(self) -> str:
        return "Santa Sangre film director"
