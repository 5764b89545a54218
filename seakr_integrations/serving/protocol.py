"""The request bodies of seakr's routes as pydantic models, and the server's limits; anything wrong is a
``BadRequest`` (HTTP 400) that names the field and what to send (docs/design/backends.md)."""

from __future__ import annotations

import os
from dataclasses import dataclass, fields
from typing import Any, TypeVar

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from seakr_integrations.params import MAX_K, MAX_TOKENS, SamplingConfig
from seakr_integrations.reasoning.config import check_alpha
from seakr_integrations.uncertainty.eigenscore import DEFAULT_ALPHA
from seakr_integrations.uncertainty.registry import estimators_for


class BadRequest(ValueError):
    """A request the server refuses (HTTP 400); the message says what was wrong."""


@dataclass(frozen=True)
class Limits:
    """The server's limits, per request and in all (docs/serving.md); each can be set with an environment variable
    ``SEAKR_SERVE_<NAME>`` (e.g. ``SEAKR_SERVE_MAX_K=32``) before the server starts.  ``max_prompts`` counts prompts,
    conversations or token sequences; beyond ``max_prompt_chars``, a prompt's tokens must fit the model's context.
    ``max_samples_in_flight`` and ``queue_seconds`` are ``admission.SampleBudget``'s ``cap`` and ``queue_seconds``."""

    max_k: int = 64
    max_tokens: int = 1024
    max_prompts: int = 64
    max_prompt_chars: int = 200_000
    max_samples_in_flight: int = 1024
    queue_seconds: int = 30

    def __post_init__(self) -> None:
        caps = {"max_k": MAX_K, "max_tokens": MAX_TOKENS}  # what any caller may ask for: a higher limit says nothing
        for f in fields(self):
            value, low, high = getattr(self, f.name), 0 if f.name == "queue_seconds" else 1, caps.get(f.name)
            if isinstance(value, bool) or not isinstance(value, int) or value < low or (high and value > high):
                within = f">= {low}" if high is None else f"from {low} to {high}"
                raise ValueError(
                    f"SEAKR_SERVE_{f.name.upper()}={value!r}: must be a whole number {within} (default {f.default}); "
                    "set it to one, or unset it"
                )

    @classmethod
    def from_environment(cls) -> Limits:
        """The limits ``SEAKR_SERVE_<NAME>`` set (the defaults for the others); a ``ValueError`` naming the variable
        for a value that is not a whole number in range, so a server never starts with limits that refuse
        everything or nothing."""
        values = {}
        for f in fields(cls):
            raw = os.environ.get(f"SEAKR_SERVE_{f.name.upper()}")
            if raw is not None:
                try:
                    values[f.name] = int(raw)
                except ValueError:
                    raise ValueError(
                        f"SEAKR_SERVE_{f.name.upper()}={raw!r}: must be a whole number (default {f.default}); set it "
                        "to one, or unset it"
                    ) from None
        return cls(**values)


def readout_from_environment() -> tuple[int | None, str]:
    """The layer (``None``: the model's L/2 - 1) and source a server reads, from ``SEAKR_SERVE_LAYER`` and
    ``SEAKR_SERVE_SOURCE``; a ``ValueError`` naming the variable for a bad value."""
    raw = os.environ.get("SEAKR_SERVE_LAYER")
    layer = None
    if raw is not None and raw.strip():
        try:
            layer = int(raw)
        except ValueError:
            layer = -1
        if layer < 0:
            raise ValueError(
                f"SEAKR_SERVE_LAYER={raw!r}: must be a 0-based decoder layer index (unset: the model's L/2 - 1)"
            )
    source = os.environ.get("SEAKR_SERVE_SOURCE", "mlp")
    if source not in ("mlp", "residual"):
        raise ValueError(f"SEAKR_SERVE_SOURCE={source!r}: choose 'mlp' (the default) or 'residual'")
    return layer, source


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)


class Message(_Body):
    """One turn of a conversation."""

    role: str
    content: str


_SAMPLING = tuple(f.name for f in fields(SamplingConfig))


class GenerateRequest(_Body):
    """``POST /v1/seakr/generate``: prompts or conversations, one sampling config for all, what to return.  The
    sampling fields are any JSON value here: ``SamplingConfig`` checks them, with its messages."""

    prompts: list[Any] | None = None
    messages: list[Any] | None = None
    k: Any = None
    temperature: Any = None
    top_k: Any = None
    top_p: Any = None
    max_tokens: Any = None
    min_tokens: Any = None
    stop: Any = None
    seed: Any = None
    layer: Any = None
    source: Any = None
    greedy_vector: Any = None
    estimators: Any = ["eigenscore"]
    alpha: Any = DEFAULT_ALPHA
    return_vectors: bool = False
    vector_dtype: Any = "float16"
    model: str | None = None
    """Ignored (an OpenAI-style client sends it): the server's model answers."""

    _config: SamplingConfig = PrivateAttr()

    @model_validator(mode="after")
    def _check(self, info: ValidationInfo) -> GenerateRequest:
        limits: Limits = (info.context or {}).get("limits", Limits())
        if (self.prompts is None) == (self.messages is None):
            raise ValueError(
                "give exactly one of 'prompts' (a list of strings) or 'messages' (a list of conversations)"
            )
        items = self.prompts if self.prompts is not None else self.messages
        if not items:
            raise ValueError("'prompts' / 'messages' must be a non-empty list")
        if len(items) > limits.max_prompts:
            raise ValueError(
                f"{len(items)} prompts in one request: the limit (max_prompts) is {limits.max_prompts}; split the "
                "request"
            )
        if self.prompts is not None:
            for i, p in enumerate(self.prompts):
                if not isinstance(p, str) or not p.strip():
                    raise ValueError(f"prompt {i} is empty or not a string")
                if len(p) > limits.max_prompt_chars:
                    raise ValueError(
                        f"prompt {i} has {len(p)} characters: the limit (max_prompt_chars) is {limits.max_prompt_chars}"
                    )
        else:
            self.messages = [_conversation(i, c, limits) for i, c in enumerate(self.messages or [])]
        settings = {name: getattr(self, name) for name in _SAMPLING if getattr(self, name) is not None}
        k, max_tokens = settings.get("k", SamplingConfig.k), settings.get("max_tokens", SamplingConfig.max_tokens)
        if isinstance(k, int) and k > limits.max_k:
            raise ValueError(f"k={k}: the limit (max_k) is {limits.max_k} samples per prompt")
        if isinstance(max_tokens, int) and max_tokens > limits.max_tokens:
            raise ValueError(f"max_tokens={max_tokens}: the limit (max_tokens) is {limits.max_tokens}")
        if "stop" in settings and not isinstance(settings["stop"], list):
            raise ValueError(f"stop={settings['stop']!r}: must be a list of strings")
        try:
            self._config = SamplingConfig(**settings)  # types, finiteness and ranges: checked there, for every caller
        except TypeError as exc:
            raise ValueError(str(exc)) from None
        served = estimators_for()  # what one generate call can feed: not the prompt probe, a call of its own
        if not isinstance(self.estimators, list) or any(e not in served for e in self.estimators):
            raise ValueError(
                f"estimators={self.estimators!r}: choose from {list(served)} (the prompt probe is a call of its own)"
            )
        self.estimators = tuple(dict.fromkeys(self.estimators))
        try:
            self.alpha = check_alpha(self.alpha)
        except ValueError:
            raise ValueError(
                f"alpha={self.alpha!r}: EigenScore's ridge must be a positive finite number (default {DEFAULT_ALPHA})"
            ) from None
        if self.vector_dtype not in ("float16", "float32"):
            raise ValueError(f"vector_dtype={self.vector_dtype!r}: choose 'float16' or 'float32'")
        return self

    @property
    def config(self) -> SamplingConfig:
        """The one sampling config of every prompt."""
        return self._config


def _conversation(i: int, conversation: Any, limits: Limits) -> list[dict[str, str]]:
    message = f"messages[{i}] must be a non-empty list of {{'role': ..., 'content': ...}} objects with strings"
    if not isinstance(conversation, list) or not conversation or not all(isinstance(m, dict) for m in conversation):
        raise ValueError(message)
    try:
        turns = [Message.model_validate(m).model_dump() for m in conversation]
    except ValidationError:
        raise ValueError(message) from None
    if sum(len(m["content"]) for m in turns) > limits.max_prompt_chars:
        raise ValueError(f"messages[{i}] is longer than the limit (max_prompt_chars) {limits.max_prompt_chars}")
    return turns


class TokenizeRequest(_Body):
    """``POST /v1/seakr/tokenize``: texts to token ids."""

    texts: list[str] = Field(min_length=1)  # an empty list gets _FIELD_HINTS' message
    add_special_tokens: bool = True


def _token_ids(rows: list[list[int]], info: ValidationInfo, what: str) -> list[list[int]]:
    vocab = (info.context or {}).get("vocab_size")
    for r in rows:
        if any(isinstance(t, bool) or (vocab is not None and not 0 <= t < vocab) or t < 0 for t in r):
            raise ValueError(f"token ids must be integers in 0..{vocab - 1 if vocab else 'the vocabulary'} ({what})")
    return rows


class DetokenizeRequest(_Body):
    """``POST /v1/seakr/detokenize``: token ids to texts."""

    token_ids: list[list[int]]
    skip_special_tokens: bool = True

    @field_validator("token_ids")
    @classmethod
    def _in_vocabulary(cls, rows: list[list[int]], info: ValidationInfo) -> list[list[int]]:
        return _token_ids(rows, info, "token_ids")


class ChatPromptRequest(_Body):
    """``POST /v1/seakr/chat_prompt``: one conversation in the model's chat template."""

    messages: list[Message]

    @field_validator("messages")
    @classmethod
    def _some(cls, messages: list[Message]) -> list[Message]:
        if not messages:
            raise ValueError("'messages' must be a non-empty list of {'role': ..., 'content': ...} objects")
        return messages


class VectorsRequest(_Body):
    """``POST /v1/seakr/vectors``: the hidden state at the last position of each token sequence."""

    sequences: list[list[int]]
    layer: int | None = None
    source: str | None = None

    @field_validator("sequences")
    @classmethod
    def _sized(cls, rows: list[list[int]], info: ValidationInfo) -> list[list[int]]:
        context = info.context or {}
        limits: Limits = context.get("limits", Limits())
        if not rows or len(rows) > limits.max_prompts:
            raise ValueError(f"'sequences' must be a list of 1 to {limits.max_prompts} token-id lists")
        longest = context.get("max_context")
        if any(not r or (longest is not None and len(r) > longest) for r in rows):
            raise ValueError(f"each sequence must hold 1 to {longest or 'the context'} token ids")
        return _token_ids(rows, info, "sequences")


Body = TypeVar("Body", bound=_Body)

_FIELD_HINTS = {
    "prompts": "'prompts' must be a non-empty list of strings",
    "messages": "'messages' must be a non-empty list of {'role': ..., 'content': ...} objects with strings",
    "texts": "'texts' must be a non-empty list of strings",
    "token_ids": "'token_ids' must be a list of lists of token ids",
    "sequences": "'sequences' must be a list of token-id lists",
    "return_vectors": "'return_vectors' must be true or false",
}


def parse(model: type[Body], body: Any, **context: Any) -> Body:
    """``body`` (parsed JSON) as ``model``, or a ``BadRequest`` that names the field and what to send."""
    if not isinstance(body, dict):
        raise BadRequest("the request body must be a JSON object with the fields of the route")
    try:
        return model.model_validate(body, context=context)
    except ValidationError as exc:
        raise BadRequest(_message(model, exc)) from None


def _message(model: type[_Body], exc: ValidationError) -> str:
    unknown = sorted(str(e["loc"][0]) for e in exc.errors() if e["type"] == "extra_forbidden")
    if unknown:
        return f"unknown field(s) {unknown}: the known ones are {sorted(model.model_fields)}"
    error = exc.errors()[0]
    if error["type"] == "value_error":  # ours: already says what to send
        return str(error["ctx"]["error"])
    name = str(error["loc"][0]) if error["loc"] else ""
    if error["type"] == "missing":
        return f"'{name}' is required"
    return _FIELD_HINTS.get(name, f"'{name}': {error['msg']}")


def parse_generate(body: Any, limits: Limits) -> GenerateRequest:
    """A ``POST /v1/seakr/generate`` body checked against ``limits`` (raises ``BadRequest``)."""
    if not isinstance(body, dict):
        raise BadRequest("the request body must be a JSON object with 'prompts' (or 'messages') and settings")
    return parse(GenerateRequest, body, limits=limits)
