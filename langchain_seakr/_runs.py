"""The chain's model calls as runs of the chain's own model: a ``ChatSeaKR`` reports chat model runs.

``LangChainObserver`` reports every self-aware call as a completion (``on_llm_*``) run.  When the chain was given a
``ChatSeaKR``, its users (``astream_events``, tracers, token streaming UIs) expect what that chat model's own
``invoke`` shows: ``on_chat_model_start`` under its name, settings and metadata, one ``on_llm_new_token`` per token
(``on_chat_model_stream``), and an ``AIMessage`` with the uncertainty in ``response_metadata`` at the end.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.callbacks.manager import CallbackManager
from langchain_core.messages import HumanMessage
from langchain_core.outputs import LLMResult
from langchain_core.retrievers import BaseRetriever

from langchain_seakr._conversions import llm_token_usage
from langchain_seakr._observer import LangChainObserver
from langchain_seakr.chat_models import ChatSeaKR
from seakr_integrations.outputs import SelfAwareOutput
from seakr_integrations.uncertainty.estimate import Uncertainty

__all__ = ["ModelRunObserver"]


class ModelRunObserver(LangChainObserver):
    """``LangChainObserver`` whose model calls are ``llm``'s own chat model runs when ``llm`` is a ``ChatSeaKR``
    (completion runs otherwise, as before).

    The loop renders its prompts itself (chat template included), so each run's input is the rendered prompt as one
    human message: what the model actually read.
    """

    def __init__(
        self,
        callbacks: CallbackManager | None,
        parent_run_id: Any,
        model_name: str,
        llm: Any,
        retriever: BaseRetriever | None = None,
        invocation_params: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(callbacks, parent_run_id, model_name, retriever, invocation_params)
        self.chat = llm if isinstance(llm, ChatSeaKR) else None
        self._chat_runs: list[CallbackManagerForLLMRun] = []

    def on_lm_start(self, prompts: Sequence[str]) -> None:
        if self.chat is None:
            super().on_lm_start(prompts)
            return
        if self.callbacks is None:
            return
        chat = self.chat
        manager = CallbackManager.configure(
            self.callbacks, chat.callbacks, chat.verbose, None, chat.tags, chat._get_ls_params(), chat.metadata
        )
        self._chat_runs = manager.on_chat_model_start(
            chat._serialized,
            [[HumanMessage(content=p)] for p in prompts],
            invocation_params={**chat._get_invocation_params(), **self.invocation_params},
            options={"stop": None},
            batch_size=len(prompts),
        )

    def on_lm_end(self, outputs: Sequence[SelfAwareOutput], uncertainties: Sequence[Uncertainty]) -> None:
        if self.chat is None:
            super().on_lm_end(outputs, uncertainties)
            return
        runs, self._chat_runs = self._chat_runs, []
        for run, output, u in zip(runs, outputs, uncertainties, strict=True):
            for chunk in self.chat.reply_chunks(output, u):
                run.on_llm_new_token(chunk.text, chunk=chunk)
            token_usage = llm_token_usage(output)
            run.on_llm_end(
                LLMResult(
                    generations=[[self.chat.reply(output, u)]],
                    llm_output={"token_usage": token_usage, "model_name": self.model_name},
                )
            )

    def on_lm_error(self, error: BaseException) -> None:
        runs, self._chat_runs = self._chat_runs, []
        for run in runs:
            run.on_llm_error(error)
        super().on_lm_error(error)
