"""``SeaKRLLM``: a self-aware back-end as a LlamaIndex ``CustomLLM`` that reports its own uncertainty.

Every completion is one SeaKR call: the greedy continuation is the text, and the k samples' hidden states at EOS
give the uncertainty (EigenScore by default).  Both travel in ``CompletionResponse.additional_kwargs``, which
LlamaIndex carries on to chat messages, so any LlamaIndex pipeline can read how sure the model was of each answer.
The same object configures the SeaKR components of this package (gate, re-ranker, query engine, workflow): they
sample exactly as ``complete`` does.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import replace
from typing import Any, Literal

from llama_index.core.base.llms.generic_utils import (
    async_stream_completion_response_to_chat_response,
    completion_response_to_chat_response,
)
from llama_index.core.base.llms.types import (
    ChatMessage,
    ChatResponse,
    ChatResponseAsyncGen,
    CompletionResponse,
    CompletionResponseAsyncGen,
    CompletionResponseGen,
    LLMMetadata,
    LogProb,
)
from llama_index.core.bridge.pydantic import Field, PrivateAttr, model_validator
from llama_index.core.llms.callbacks import llm_chat_callback, llm_completion_callback
from llama_index.core.llms.custom import CustomLLM

from seakr_integrations.backends.base import SelfAwareBackend
from seakr_integrations.backends.concurrent import ConcurrentBackend
from seakr_integrations.backends.remote_checks import DEFAULT_TIMEOUT
from seakr_integrations.keywords import accepted_keywords, check_keywords
from seakr_integrations.models import DEFAULT_MODEL
from seakr_integrations.outputs import SelfAwareOutput, text_pieces
from seakr_integrations.params import SamplingConfig
from seakr_integrations.reasoning.config import SeaKRConfig
from seakr_integrations.self_aware_model import NOT_SELF_AWARE, SelfAwareModel
from seakr_integrations.setting_conflicts import model_place_conflict
from seakr_integrations.uncertainty.estimate import Uncertainty
from seakr_integrations.uncertainty.registry import check_estimator, estimator_names

__all__ = ["SeaKRLLM"]

_SAMPLING_KEYS = ("k", "temperature", "top_k", "top_p", "max_tokens", "seed", "layer", "source", "stop")
_SAMPLING = SamplingConfig()
_LOOP = SeaKRConfig()


class SeaKRLLM(CustomLLM):
    """A self-aware LM (``HFBackend``, ``VLLMBackend``) as a LlamaIndex LLM whose responses carry their uncertainty.

    ``complete(prompt)`` returns the greedy continuation as ``text``; ``additional_kwargs`` holds
    ``"uncertainty"`` (``value``: higher = more uncertain, ``None`` when not computable; ``estimator``, ``layer``,
    ``source``, ``num_samples``, ``num_dropped``, ``note``), ``"samples"`` (the k sampled texts the score came
    from), ``"finish_reason"`` and ``"model"``; ``logprobs`` holds the greedy tokens' log-probabilities.  Per-call
    keyword arguments override the sampling fields (``llm.complete(p, k=10, stop=["\\n"])``).

    The back-end is named as in LangChain's ``ChatSeaKR`` / ``SeaKRLLM``, and the defaults are the core's
    (``SamplingConfig``, ``SeaKRConfig``, ``DEFAULT_MODEL``).

    Args:
        backend: A ``SelfAwareBackend`` instance, or ``"hf"`` / ``"vllm"`` to load ``model`` once per process
            (one loaded model per resolved model and kind, whatever alias names it).
        model: Short model name (``seakr models``) or model directory, when ``backend`` is a kind.
        base_url: A ``seakr serve`` server whose model to use instead (``backend`` and ``model`` are then unused).
        api_key: That server's API key, if it has one (kept only inside the HTTP client, never in repr or an
            error; a key with a newline or a non-ASCII character is refused at once).
        timeout: Seconds one request to that server may take, its retries included (used with ``base_url``).
        **kwargs: The fields below, and ``LLM``'s (``callback_manager``, ``system_prompt``...).

    Raises:
        TypeError: ``backend`` is not self-aware (e.g. a LlamaIndex ``OpenAI`` LLM): SeaKR needs hidden states; or an
            unknown keyword (the error names the nearest one).
        ValueError: Bad sampling settings or estimator, or ``base_url`` with a ``backend`` or ``model`` it would
            drop.

    Example:
        >>> llm = SeaKRLLM(backend="hf", model="smollm2", k=10)  # doctest: +SKIP
        >>> response = llm.complete("The capital of France is")  # doctest: +SKIP
        >>> response.text, response.additional_kwargs["uncertainty"]["value"]  # doctest: +SKIP
    """

    model_name: str = Field(default="", description="The back-end's model name (set from the back-end).")
    k: int = Field(default=_SAMPLING.k, description="Samples per call whose EOS hidden states give the uncertainty.")
    temperature: float = Field(
        default=_SAMPLING.temperature, description="Temperature of the k samples (the text is greedy)."
    )
    top_k: int = Field(default=_SAMPLING.top_k, description="Top-k of the samples.")
    top_p: float = Field(default=_SAMPLING.top_p, description="Top-p of the samples.")
    max_tokens: int = Field(default=_SAMPLING.max_tokens, description="Maximum new tokens per continuation.")
    seed: int = Field(default=_SAMPLING.seed, description="Sampling seed (same seed, same samples).")
    layer: int | None = Field(default=_SAMPLING.layer, description="Decoder layer read (None: L/2 - 1, SeaKR's).")
    source: Literal["mlp", "residual"] = Field(
        default=_SAMPLING.source, description="Hidden vector: MLP output or residual."
    )
    estimator: str = Field(
        default=_LOOP.estimator,
        description=f"Uncertainty estimator: one of {', '.join(estimator_names())} ('prompt' makes one more call).",
    )
    alpha: float = Field(default=_LOOP.alpha, description="EigenScore's ridge.")
    stop: list[str] = Field(default_factory=list, description="Stop strings of every completion.")
    chat_template: bool | None = Field(
        default=None,
        description="Wrap un-formatted prompts and chat messages in the model's chat template (None: when it has one).",
    )
    context_window: int = Field(default=0, description="The model's context in tokens (set from the back-end).")

    _backend: ConcurrentBackend = PrivateAttr()
    _spec: SelfAwareModel = PrivateAttr()

    def __init__(
        self,
        backend: SelfAwareBackend | str | None = "hf",
        model: str = DEFAULT_MODEL,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        **kwargs: Any,
    ) -> None:
        check_keywords("SeaKRLLM", kwargs, accepted_keywords(type(self)))
        conflict = model_place_conflict("SeaKRLLM", backend, model, base_url)
        if conflict:
            raise ValueError(conflict)
        if backend is not None and not isinstance(backend, (str, SelfAwareBackend)):
            raise TypeError(NOT_SELF_AWARE.format(what=f"backend={type(backend).__name__}"))
        # where the model runs, resolved now (LlamaIndex reads the context window and the template); the sampling
        # and scoring fields are validated by pydantic below, and ``spec`` joins both
        spec = SelfAwareModel(backend=backend, model=model, base_url=base_url, api_key=api_key, timeout=timeout)
        spec = replace(spec, chat_template=kwargs.get("chat_template"))
        resolved = spec.resolve()
        kwargs["chat_template"] = use_chat = spec.uses_chat_template()
        if use_chat:
            kwargs.setdefault("completion_to_prompt", spec.prompt)
            kwargs.setdefault("messages_to_prompt", _ChatTemplate(spec))
        super().__init__(model_name=resolved.model_name, context_window=resolved.max_context, **kwargs)
        self._spec = spec
        self._backend = resolved

    @model_validator(mode="after")
    def _check_sampling(self) -> SeaKRLLM:
        check_estimator(self.estimator)
        self.sampling_config()  # SamplingConfig's checks, with its messages
        return self

    @classmethod
    def class_name(cls) -> str:
        return "SeaKRLLM"

    @property
    def spec(self) -> SelfAwareModel:
        """This LLM as the core describes it (the same object LangChain's models wrap), with its fields as they are
        now."""
        sampling = self.sampling_config()
        return replace(
            self._spec,
            sampling=sampling,
            estimator=self.estimator,
            alpha=self.alpha,
            chat_template=self.chat_template,
        )

    @property
    def backend(self) -> ConcurrentBackend:
        """The self-aware back-end (thread-safe view; ``.inner`` is the back-end passed in)."""
        return self._backend

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(
            context_window=self.context_window,
            num_output=self.max_tokens,
            model_name=self.model_name,
            is_chat_model=bool(self.chat_template),
        )

    def sampling_config(self, **overrides: Any) -> SamplingConfig:
        """The back-end parameters of one completion (fields of this LLM, then ``overrides``)."""
        values = {key: getattr(self, key) for key in _SAMPLING_KEYS}
        values.update({key: v for key, v in overrides.items() if key in _SAMPLING_KEYS})
        values["stop"] = tuple(values["stop"] or ())
        return SamplingConfig(**values)

    def loop_config(self, config: SeaKRConfig | None = None) -> SeaKRConfig:
        """The settings a SeaKR component over this LLM runs with: its sampling, estimator and chat template, with
        ``config``'s changes from the defaults on top (``SelfAwareModel.loop_config``, the rule of both packages)."""
        return self.spec.loop_config(config)

    # ---------------------------------------------------------------------------------------------- completion
    def _run(self, prompt: str, formatted: bool, kwargs: dict[str, Any]) -> tuple[SelfAwareOutput, Uncertainty]:
        """Generate and score one prompt (blocking)."""
        if not isinstance(prompt, str) or not prompt.strip():
            raise ValueError("prompt is empty: SeaKRLLM needs some text to complete")
        if not formatted:
            prompt = self.completion_to_prompt(prompt)
        ((output, uncertainty),) = self.spec.generate_scored([prompt], **kwargs)
        return output, uncertainty

    def _extras(self, output: SelfAwareOutput, uncertainty: Uncertainty) -> dict[str, Any]:
        return {
            "uncertainty": uncertainty.to_metadata(),
            "samples": [s.text for s in output.samples],
            "finish_reason": output.greedy.finish_reason,
            "stop_reason": output.greedy.stop_reason,
            "model": self.model_name,
        }

    def _logprobs(self, output: SelfAwareOutput) -> list[list[LogProb]]:
        decode = self._backend.tokenizer.decode
        return [
            [LogProb(token=decode([tid], skip_special_tokens=False), logprob=float(lp), bytes=[])]
            for tid, lp in zip(output.greedy.token_ids, output.greedy.logprobs, strict=False)
        ]

    def _response(self, output: SelfAwareOutput, uncertainty: Uncertainty) -> CompletionResponse:
        return CompletionResponse(
            text=output.greedy.text,
            additional_kwargs=self._extras(output, uncertainty),
            logprobs=self._logprobs(output),
            raw={"prompt": output.prompt},
        )

    def _chunks(self, output: SelfAwareOutput, uncertainty: Uncertainty) -> list[CompletionResponse]:
        """The greedy text as streaming chunks, token by token; every chunk carries the uncertainty.

        The uncertainty needs all k samples, so the chunks are cut after the call: streaming gives LlamaIndex's
        streaming interface (``streaming=True`` query engines, ``stream_chat``), not earlier first tokens.
        """
        extras = self._extras(output, uncertainty)
        decode = self._backend.tokenizer.decode
        pieces = text_pieces(output.greedy, lambda ids: decode(ids, skip_special_tokens=True))
        chunks, so_far = [], ""
        for delta in pieces:
            so_far += delta
            chunks.append(CompletionResponse(text=so_far, delta=delta, additional_kwargs=dict(extras)))
        return chunks

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        """The greedy completion of ``prompt`` with its uncertainty and samples in ``additional_kwargs``.

        Raises:
            ValueError: Empty prompt, bad sampling overrides, or a prompt too long for the model.
        """
        return self._response(*self._run(prompt, formatted, kwargs))

    @llm_completion_callback()
    def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponseGen:
        """``complete`` as chunks (see ``_chunks``: they come after the self-aware call)."""
        chunks = self._chunks(*self._run(prompt, formatted, kwargs))

        def gen() -> CompletionResponseGen:
            yield from chunks

        return gen()

    @llm_completion_callback()
    async def acomplete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        """``complete`` in a worker thread: the event loop keeps running during the model call."""
        return self._response(*await asyncio.to_thread(self._run, prompt, formatted, kwargs))

    @llm_completion_callback()
    async def astream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponseAsyncGen:
        """``stream_complete`` with the model call in a worker thread."""
        chunks = self._chunks(*await asyncio.to_thread(self._run, prompt, formatted, kwargs))

        async def gen() -> CompletionResponseAsyncGen:
            for chunk in chunks:
                yield chunk

        return gen()

    # -------------------------------------------------------------------------------------------------- chat
    @llm_chat_callback()
    async def achat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponse:
        """``chat`` with the model call in a worker thread (``CustomLLM``'s default would block the event loop)."""
        response = await self.acomplete(self.messages_to_prompt(messages), formatted=True, **kwargs)
        return completion_response_to_chat_response(response)

    @llm_chat_callback()
    async def astream_chat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponseAsyncGen:
        """``stream_chat`` with the model call in a worker thread."""
        chunks = await self.astream_complete(self.messages_to_prompt(messages), formatted=True, **kwargs)
        return async_stream_completion_response_to_chat_response(chunks)


class _ChatTemplate:
    """``messages_to_prompt`` through the model's own chat template (the generic one is a plain transcript)."""

    def __init__(self, spec: SelfAwareModel) -> None:
        self.spec = spec

    def __call__(self, messages: Sequence[ChatMessage]) -> str:
        return self.spec.messages_prompt([{"role": m.role.value, "content": m.content or ""} for m in messages])
