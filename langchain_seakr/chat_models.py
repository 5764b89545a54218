"""``ChatSeaKR``: a LangChain chat model whose every reply carries the model's own uncertainty.

Messages are rendered with the model's chat template; one self-aware call then yields the greedy reply and the k
samples whose hidden states give the uncertainty, reported in ``AIMessage.response_metadata["uncertainty"]``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.messages.ai import UsageMetadata
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from pydantic import ConfigDict

from langchain_seakr._conversions import generation_info, usage
from langchain_seakr._model import SelfAwareModelMixin
from seakr_integrations.outputs import SelfAwareOutput, text_pieces
from seakr_integrations.uncertainty.estimate import Uncertainty

__all__ = ["ChatSeaKR"]

_ROLES = {"system": "system", "human": "user", "ai": "assistant"}


def _text(message: BaseMessage) -> str:
    """The message's text; non-text content (images, audio, files) is refused rather than dropped."""
    if isinstance(message.content, str):
        return message.content
    parts = []
    for block in message.content:
        if isinstance(block, str):
            parts.append(block)
        elif isinstance(block, dict) and block.get("type") == "text":
            parts.append(str(block.get("text", "")))
        else:
            kind = block.get("type") if isinstance(block, dict) else type(block).__name__
            raise ValueError(
                f"ChatSeaKR takes text only; the {message.type} message has a {kind!r} content block. "
                "Send the text alone (the packaged models read no images, audio or files)."
            )
    return "".join(parts)


class ChatSeaKR(SelfAwareModelMixin, BaseChatModel):
    """A self-aware chat model (Hugging Face or vLLM back-end) for LangChain.

    Example:
        ```python
        from langchain_seakr import ChatSeaKR

        chat = ChatSeaKR(model="smollm2-135m-instruct", k=10, max_tokens=48)
        reply = chat.invoke("Who wrote Hamlet?")
        print(reply.content, reply.response_metadata["uncertainty"]["value"])
        ```

    ``response_metadata`` holds ``uncertainty`` (value: higher = less sure; ``None`` when it could not be computed,
    with ``note`` saying why), ``logprobs`` of the reply's tokens, the k ``samples``, ``finish_reason`` and
    ``model_name``.  ``usage_metadata.output_tokens`` counts every token generated, the k samples included.

    Streaming: the uncertainty needs all k samples, so the reply is generated whole first and then streamed token by
    token; the last chunk (``chunk_position="last"``) carries the metadata and the usage.  Tool calling, structured
    output and non-text inputs are not supported (the standard capability flags say so).
    """

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True, populate_by_name=True)

    streaming: bool = False
    """Stream by default (``invoke`` aggregates the streamed chunks)."""

    @property
    def _llm_type(self) -> str:
        return "seakr-chat"

    def render(self, messages: list[BaseMessage]) -> str:
        """The prompt text for ``messages``: the model's chat template with the assistant turn opened (a plain
        ``role: text`` transcript when the tokenizer has no template)."""
        if not messages:
            raise ValueError("no messages: pass at least one message (e.g. chat.invoke('Hello'))")
        turns = []
        for m in messages:
            role = _ROLES.get(m.type)
            if role is None:
                raise ValueError(
                    f"ChatSeaKR cannot take a {m.type!r} message: it supports system, human and ai messages "
                    "(no tool calling)"
                )
            turns.append({"role": role, "content": _text(m)})
        if not any(t["content"].strip() for t in turns):
            raise ValueError("every message is empty: there is nothing to answer")
        return self.spec.messages_prompt(turns)

    def _call(
        self, messages: list[BaseMessage], stop: list[str] | None, kwargs: dict[str, Any]
    ) -> tuple[SelfAwareOutput, Uncertainty]:
        kwargs.pop("model", None)  # a per-call model name only relabels traces; the loaded model answers
        ((output, u),) = self.scored_generate([self.render(messages)], stop, **kwargs)
        return output, u

    def _metadata(self, output: SelfAwareOutput, u: Uncertainty) -> tuple[dict[str, Any], UsageMetadata]:
        info = generation_info(output, u, self.answering_model)
        info["model_provider"] = "seakr"
        return info, UsageMetadata(**usage(output))  # type: ignore[typeddict-item]

    def reply(self, output: SelfAwareOutput, u: Uncertainty) -> ChatGeneration:
        """One self-aware output as this model's reply (also what ``SeaKRChain`` reports for its calls)."""
        info, used = self._metadata(output, u)
        message = AIMessage(content=output.greedy.text, response_metadata=info, usage_metadata=used)
        return ChatGeneration(message=message, generation_info=info)

    def reply_chunks(self, output: SelfAwareOutput, u: Uncertainty) -> list[ChatGenerationChunk]:
        """The reply token by token; the last chunk (``chunk_position="last"``) carries the metadata and usage."""
        info, used = self._metadata(output, u)
        tokenizer = self.self_aware_backend.tokenizer
        pieces = text_pieces(output.greedy, lambda ids: tokenizer.decode(ids, skip_special_tokens=True)) or [""]
        chunks = []
        for i, piece in enumerate(pieces):
            last = i == len(pieces) - 1
            message = AIMessageChunk(
                content=piece,
                response_metadata=info if last else {},
                usage_metadata=used if last else None,
                chunk_position="last" if last else None,
            )
            chunks.append(ChatGenerationChunk(message=message))
        return chunks

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return ChatResult(generations=[self.reply(*self._call(messages, stop, kwargs))])

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        for chunk in self.reply_chunks(*self._call(messages, stop, kwargs)):
            if run_manager is not None:
                run_manager.on_llm_new_token(chunk.text, chunk=chunk)
            yield chunk
