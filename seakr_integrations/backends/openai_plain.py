"""A plain OpenAI-compatible server (stock ``vllm serve``) behind ``RemoteBackend``: logprobs, no hidden states.
The client's part for such a server: what it serves (:func:`connect`), SeaKR's call mapped onto ``/v1/completions``
(:func:`generate`) and its tokenizer onto ``/tokenize`` and ``/detokenize``; estimators that need hidden states or
raw logits are refused before any call (:func:`check_estimators`; docs/design/backends.md)."""

from __future__ import annotations

import concurrent.futures
import functools
import itertools
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

from seakr_integrations.backends.remote_errors import RemoteBackendError
from seakr_integrations.outputs import Continuation, SelfAwareOutput, token_offsets
from seakr_integrations.params import SamplingConfig
from seakr_integrations.uncertainty.registry import REGISTRY

Request = Callable[..., Any]
"""``request(method, path, body=None, absent=()) -> parsed JSON`` (``RemoteBackend._request``: retries, timeouts,
errors; ``None`` for a status in ``absent``)."""

HIDDEN_NEEDS = frozenset({"vectors", "logits"})
"""What an estimator may need that a plain server cannot give: the samples' EOS hidden states (EigenScore) and the
raw logits' logsumexp (energy; the completions route returns normalised log-probabilities only)."""

MAX_STOP = 4
"""Stop strings one completions request may carry (the OpenAI API's limit, which vLLM enforces).  SeaKR's calls
can have more: the first ``MAX_STOP`` go to the server, and the rest cut what comes back (:func:`apply_stops`)."""

PLUGIN_COMMAND = (
    "`seakr serve MODEL`, which runs `VLLM_PLUGINS=seakr vllm serve MODEL_DIR` with the options the read-out needs "
    "(`seakr serve --dry-run MODEL` prints them; docs/serving.md)"
)
"""How to start a server that reads hidden states, in the words of an error message."""


def logprob_estimators() -> tuple[str, ...]:
    """The estimators a plain server feeds: every one that needs neither hidden states nor raw logits."""
    return tuple(name for name, e in REGISTRY.items() if not e.needs & HIDDEN_NEEDS)


def unavailable_message(estimator: str, where: str, field: str = "estimator") -> str:
    """Why ``estimator`` cannot run on the plain server at ``where``, and the two ways out."""
    lacks = "the samples' hidden states" if "vectors" in REGISTRY[estimator].needs else "the raw logits"
    usable = ", ".join(logprob_estimators())
    return (
        f"{field}={estimator!r} needs {lacks}, and the server at {where} is a plain OpenAI-compatible server (it has "
        f"no /v1/seakr/info route): it returns token log-probabilities only. Either pass an estimator that needs only "
        f'those, e.g. SeaKRConfig(estimator="perplexity") (or ChatSeaKR/SeaKRLLM(estimator="perplexity"), seakr ask '
        f"--estimator perplexity; any of {usable}), or start a server with seakr's plugin, which reads hidden "
        f"states: {PLUGIN_COMMAND}"
    )


def check_estimators(backend: Any, names: Iterable[tuple[str, str | None]]) -> None:
    """Refuse (``ValueError``, saying how to go on), before any call, the first ``(field, estimator)`` that ``backend``
    cannot feed: only a back-end that reads no hidden states (``RemoteBackend`` on a plain server) refuses any."""
    if getattr(backend, "reads_hidden_states", True):
        return
    for field, name in names:
        if name is not None and name in REGISTRY and REGISTRY[name].needs & HIDDEN_NEEDS:
            raise ValueError(unavailable_message(name, getattr(backend, "base_url", "this URL"), field))


def served_model(request: Request, where: str) -> tuple[str, int | None]:
    """The first model the server lists (``GET /v1/models``) and its context length when the server says it."""
    models = request("GET", "/v1/models").get("data") or []
    if not models or not isinstance(models[0], dict) or "id" not in models[0]:
        raise ValueError(f"{where}/v1/models lists no model: is this an OpenAI-compatible server?")
    context = models[0].get("max_model_len")
    return str(models[0]["id"]), None if context is None else int(context)


class ServerTokenizer:
    """The tokenizer calls SeaKR's prompt building and query masking make, answered by a server and cached (each text
    and token sequence is asked once): a subclass asks (``_ask_ids``, ``_ask_text``, ``apply_chat_template``)."""

    chat_template: str | None

    def __call__(self, text: str, add_special_tokens: bool = True) -> SimpleNamespace:
        return SimpleNamespace(input_ids=list(self._tokenize(text, add_special_tokens)))

    def decode(self, ids: Sequence[int], skip_special_tokens: bool = True) -> str:
        return self._decode(tuple(int(i) for i in ids), skip_special_tokens)

    @functools.lru_cache(maxsize=4096)  # noqa: B019 - one tokenizer per back-end, lives as long as it
    def _tokenize(self, text: str, add_special_tokens: bool) -> tuple[int, ...]:
        return self._ask_ids(text, add_special_tokens)

    @functools.lru_cache(maxsize=4096)  # noqa: B019
    def _decode(self, ids: tuple[int, ...], skip_special_tokens: bool) -> str:
        return self._ask_text(ids, skip_special_tokens)

    def _ask_ids(self, text: str, add_special_tokens: bool) -> tuple[int, ...]: ...

    def _ask_text(self, ids: tuple[int, ...], skip_special_tokens: bool) -> str: ...


class PlainTokenizer(ServerTokenizer):
    """The tokenizer calls answered by the server's ``/tokenize`` and ``/detokenize`` (stock vLLM's).

    ``/detokenize`` has no ``skip_special_tokens``: special tokens stay in decoded text.  SeaKR decodes only to place
    words in a continuation's text, and every such use cuts the decoded text at the continuation's own text.
    """

    def __init__(self, request: Request, model: str) -> None:
        self._request = request
        self._model = model
        probe = {"model": model, "messages": [{"role": "user", "content": "Hi"}]}
        has_template = request("POST", "/tokenize", probe, absent=(400, 422)) is not None
        self.chat_template = "server" if has_template else None

    def decode(self, ids: Sequence[int], skip_special_tokens: bool = True) -> str:
        return super().decode(ids)  # the flag is not sent, so not part of the cache key either

    def _ask_ids(self, text: str, add_special_tokens: bool) -> tuple[int, ...]:
        body = {"model": self._model, "prompt": text, "add_special_tokens": add_special_tokens}
        return tuple(int(t) for t in self._request("POST", "/tokenize", body)["tokens"])

    def _ask_text(self, ids: tuple[int, ...], skip_special_tokens: bool) -> str:
        if not ids:
            return ""
        return str(self._request("POST", "/detokenize", {"model": self._model, "tokens": list(ids)})["prompt"])

    def apply_chat_template(self, messages: list[dict[str, str]], **_: Any) -> str:
        body = {"model": self._model, "messages": messages, "add_generation_prompt": True}
        return self.decode([int(t) for t in self._request("POST", "/tokenize", body)["tokens"]])


@dataclass(frozen=True)
class PlainServer:
    """What ``RemoteBackend`` learns of a plain server when it connects (:func:`connect`)."""

    model: str
    max_context: int
    tokenizer: PlainTokenizer


def connect(request: Request, where: str, *, return_vectors: bool = False) -> PlainServer:
    """The model the plain server at ``where`` serves, its context length and its tokenizer.  ``return_vectors`` is
    refused (``ValueError``: there are no vectors to return); a server without ``/tokenize``, or that does not say
    its context length, is a ``RemoteBackendError``."""
    if return_vectors:
        raise ValueError(
            f"return_vectors=True: {where} is a plain OpenAI-compatible server (no /v1/seakr/info), which "
            f"returns no hidden states; leave return_vectors off, or start a server with seakr's plugin: "
            f"{PLUGIN_COMMAND}"
        )
    try:
        model, context = served_model(request, where)
    except (KeyError, TypeError, ValueError, AttributeError) as error:
        raise RemoteBackendError(f"{where}: {type(error).__name__}: {error}") from None
    probe = request("POST", "/tokenize", {"model": model, "prompt": "Hi"}, absent=(404,))
    if probe is None:
        raise RemoteBackendError(
            f"{where} has neither seakr's routes (/v1/seakr/info) nor a /tokenize route: SeaKR builds its "
            "prompts with the model's tokenizer, which it reads through the server's /tokenize and /detokenize "
            f"(a stock `vllm serve` has them). Start a vLLM server, or one with seakr's plugin: {PLUGIN_COMMAND}",
            404,
        )
    tokenizer = PlainTokenizer(request, model)
    context = context or (probe.get("max_model_len") if isinstance(probe, dict) else None)
    if context is None:
        raise RemoteBackendError(f"{where} does not say its context length (/v1/models max_model_len)")
    return PlainServer(model, int(context), tokenizer)


def generate(
    request: Request,
    model: str,
    prompts: list[str],
    prompt_ids: list[list[int]],
    config: SamplingConfig,
    layer: int,
    where: str,
    decode: Callable[[list[int]], str] | None = None,
) -> list[SelfAwareOutput]:
    """The outputs of prompts that share one sampling config: the greedy and the sample requests
    (:func:`completion_bodies`) sent at once, their replies read by :func:`plain_outputs`; a malformed reply is a
    ``RemoteBackendError``."""
    bodies = completion_bodies(model, prompt_ids, config, seeded=False)
    with concurrent.futures.ThreadPoolExecutor(len(bodies)) as pool:
        replies = list(pool.map(lambda b: request("POST", "/v1/completions", b), bodies))
    try:
        return plain_outputs(prompts, prompt_ids, config, replies, layer, where, decode)
    except ValueError as error:
        raise RemoteBackendError(str(error)) from None


def check_sampling(config: SamplingConfig, where: str) -> None:
    """Refuse (``ValueError``, saying why) a setting a plain server cannot serve: a hidden-state ``source`` other than
    the default (nothing is read there; ``layer`` is refused by ``resolve_layer``), or the greedy continuation's
    hidden state (``greedy_vector``, what a state probe reads)."""
    if config.greedy_vector:
        raise ValueError(
            f"greedy_vector=True: the server at {where} is a plain OpenAI-compatible server, which returns no hidden "
            f"states, so a probe on the model's state (the state-probe rule) cannot read one; leave the rule out, or "
            f"start a server with seakr's plugin: {PLUGIN_COMMAND}"
        )
    if config.source != "mlp":
        raise ValueError(
            f"source={config.source!r}: the server at {where} is a plain OpenAI-compatible server, which returns no "
            f"hidden states, so there is no source to read; leave source unset, or start a server with seakr's "
            f"plugin: {PLUGIN_COMMAND}"
        )


def completion_bodies(
    model: str, prompt_ids: list[list[int]], config: SamplingConfig, *, seeded: bool = False
) -> list[dict[str, Any]]:
    """The ``/v1/completions`` requests of one self-aware call of these prompts: the greedy one (temperature 0), and
    the k samples' (``n=k``, the config's sampling) unless ``k`` is 0.  Both return each token's log-probability
    (``logprobs=0``: the chosen token's only) and the token ids (vLLM's ``return_token_ids``).  The samples carry
    the config's ``seed`` only when ``seeded``: a plain server cannot say that it takes one, and a stock vLLM on CPU
    with chunked prefill (its default there) exits on a seeded request whose prefill is chunked."""
    shared = {
        "model": model,
        "prompt": prompt_ids,
        "max_tokens": config.max_tokens,
        "min_tokens": config.min_tokens,
        "stop": list(config.stop[:MAX_STOP]),
        "logprobs": 0,
        "return_token_ids": True,
    }
    bodies = [{**shared, "n": 1, "temperature": 0.0}]
    if config.k > 0:
        sampling = {"temperature": config.temperature, "top_p": config.top_p, "top_k": max(config.top_k, 0)}
        bodies.append({**shared, "n": config.k, **sampling, **({"seed": config.seed} if seeded else {})})
    return bodies


def continuation_from_choice(
    choice: dict[str, Any],
    where: str,
    *,
    offsets: bool = False,
    stops: Sequence[str] = (),
    decode: Callable[[list[int]], str] | None = None,
) -> Continuation:
    """One completion choice as a ``Continuation`` (``offsets``: where each token ends in the text, from the
    log-probabilities' token strings when they spell the text), cut at the first of ``stops``, the stop strings
    the server was not sent (:func:`apply_stops`; ``decode`` places the tokens when their strings do not).
    A ``ValueError`` when the choice lacks token ids or log-probabilities, or their counts differ."""
    token_ids = choice.get("token_ids")
    logprobs = choice.get("logprobs") or {}
    values = logprobs.get("token_logprobs")
    if token_ids is None or values is None:
        raise ValueError(
            f"{where}/v1/completions returned no token ids or no logprobs: SeaKR needs a server that honours "
            "`logprobs` and vLLM's `return_token_ids` (vLLM 0.10.2 or newer)"
        )
    if len(values) != len(token_ids):
        raise ValueError(f"{where}/v1/completions returned {len(values)} logprobs for {len(token_ids)} tokens")
    finish = choice.get("finish_reason")
    if finish not in ("stop", "length"):
        raise ValueError(f"{where}/v1/completions ended a continuation with finish_reason={finish!r}")
    stop = choice.get("stop_reason")
    text = str(choice.get("text") or "")
    continuation = Continuation(
        text,
        [int(t) for t in token_ids],
        [-math.inf if v is None else float(v) for v in values],
        finish,
        stop if isinstance(stop, str) else None,
        offsets=_offsets(text, logprobs.get("tokens")),
    )
    continuation = apply_stops(continuation, stops, decode)
    if not offsets:
        continuation.offsets = None
    return continuation


def apply_stops(
    continuation: Continuation, stops: Sequence[str], decode: Callable[[list[int]], str] | None = None
) -> Continuation:
    """``continuation`` ended where the server would have ended it had it taken ``stops`` too: the text cut before
    the stop string that is complete first, the tokens kept up to the one that completes it (as a server keeps
    them), ``finish_reason="stop"``.  Unchanged when none of ``stops`` is in its text.  Token ends come from
    ``continuation.offsets``, else from ``decode`` (growing prefixes); without either the tokens are kept whole."""
    found = [(at + len(s), at, s) for s in stops if (at := continuation.text.find(s)) >= 0]
    if not found:
        return continuation
    end, at, stop = min(found)
    ends = continuation.offsets
    if ends is None and decode is not None:
        ends = token_offsets(continuation, decode)
    keep = len(continuation.token_ids)
    if ends is not None:
        keep = next((i + 1 for i, e in enumerate(ends) if e >= end), keep)
    return Continuation(
        continuation.text[:at],
        continuation.token_ids[:keep],
        continuation.logprobs[:keep],
        "stop",
        stop,
        offsets=None if ends is None else [min(e, at) for e in ends[:keep]],
    )


def _offsets(text: str, pieces: Sequence[str] | None) -> list[int] | None:
    """Where each token ends in ``text`` when the token strings joined start with it (else ``None``: decode)."""
    if not pieces or not "".join(pieces).startswith(text):
        return None
    return [min(end, len(text)) for end in itertools.accumulate(map(len, pieces))]


def plain_outputs(
    prompts: list[str],
    prompt_ids: list[list[int]],
    config: SamplingConfig,
    replies: list[dict[str, Any]],
    layer: int,
    where: str,
    decode: Callable[[list[int]], str] | None = None,
) -> list[SelfAwareOutput]:
    """The outputs of ``prompts`` from the replies to :func:`completion_bodies` (greedy first, then the samples),
    each cut at the stop strings the requests could not carry (``decode``: see :func:`apply_stops`).  A
    ``ValueError`` when a reply has the wrong number of choices, or a choice is malformed."""
    grouped: list[list[list[Continuation]]] = []
    stops = config.stop[MAX_STOP:]
    for reply, n in zip(replies, [1, config.k], strict=False):
        choices = sorted(reply.get("choices") or [], key=lambda c: int(c.get("index", 0)))
        if len(choices) != n * len(prompts):
            raise ValueError(f"{where}/v1/completions returned {len(choices)} choices for {len(prompts)} x {n}")
        continuations = [
            continuation_from_choice(c, where, offsets=n == 1, stops=stops, decode=decode) for c in choices
        ]
        grouped.append([continuations[i * n : (i + 1) * n] for i in range(len(prompts))])
    samples = grouped[1] if len(grouped) > 1 else [[] for _ in prompts]
    return [
        SelfAwareOutput(prompt, ids, greedy[0], sampled, layer, config.source)
        for prompt, ids, greedy, sampled in zip(prompts, prompt_ids, grouped[0], samples, strict=True)
    ]
