"""seakr's routes in vLLM's own OpenAI-compatible server (the ``vllm.endpoint_plugins`` entry point ``seakr``), listed
in docs/serving.md; errors and the worker side: docs/design/backends.md."""

import asyncio
import logging
import socket
from argparse import Namespace
from collections.abc import Awaitable, Callable
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from seakr_integrations.backends.base import chat_template_prompt
from seakr_integrations.backends.vllm_settings import CHUNKED_PREFILL_SEEDS
from seakr_integrations.serving.admission import Overloaded, SampleBudget
from seakr_integrations.serving.launch import TOP_K_TOP_P
from seakr_integrations.serving.protocol import (
    BadRequest,
    ChatPromptRequest,
    DetokenizeRequest,
    GenerateRequest,
    Limits,
    TokenizeRequest,
    VectorsRequest,
    parse,
    parse_generate,
    readout_from_environment,
)
from seakr_integrations.serving.replicas import replica_fingerprint
from seakr_integrations.wire import continuation_to_json, encode_vectors, uncertainty_to_json

log = logging.getLogger("vllm.seakr")
"""Under vLLM's logger: the plugin's lines reach the server's log with vLLM's, in its format and at its level
(``VLLM_LOGGING_LEVEL``); a logger outside ``vllm`` printed nothing there."""

Handler = Callable[[Request, Any, Any], Any]


class SeaKREndpointPlugin:
    """vLLM endpoint plugin: attaches seakr's routes and starts the read-out hook with the engine."""

    name = "seakr"
    required_tasks = ("generate",)

    def attach_router(self, app: Any) -> None:
        app.include_router(_router())

    async def init_state(self, engine_client: Any, state: Any, args: Namespace) -> None:
        from seakr_integrations.serving.engine import ServerEngine

        state.seakr = None
        state.seakr_error = "this server has no engine (render-only)"
        try:  # a bad SEAKR_SERVE_* setting: the standard routes keep working; seakr's answer 503 with the reason
            state.seakr_limits = limits = Limits.from_environment()
            layer, source = readout_from_environment()
        except ValueError as exc:
            state.seakr_error = f"seakr's routes are off: {exc}"
            log.error("seakr routes disabled: %s", exc)
            return
        state.seakr_budget = SampleBudget(limits.max_samples_in_flight, limits.queue_seconds)
        if engine_client is None:
            return
        processors = [str(p) for p in (getattr(args, "logits_processors", None) or [])]
        try:
            state.seakr = await ServerEngine.start(engine_client, layer, source, TOP_K_TOP_P in processors)
        except Exception as exc:  # the standard routes keep working; seakr's answer 503 with the reason
            state.seakr_error = str(exc)
            log.error("seakr routes disabled: %s", exc)
            return
        state.seakr_replica = f"{socket.gethostname()}:{getattr(args, 'port', None)}"
        state.seakr_fingerprint = replica_fingerprint(state.seakr.info())
        log.info("seakr routes ready: %s", state.seakr.info())
        for warning in start_warnings(state.seakr):
            log.warning("%s", warning)


def start_warnings(engine: Any) -> list[str]:
    """What a server's log says once at start about settings that cost its clients: samples without seeds, and a
    packaged model served in another dtype than its shipped calibration profiles were made in."""
    from seakr_integrations.models import REFERENCE_DTYPE, packaged_model_served

    warnings = []
    if not engine.takes_seeds:
        warnings.append(
            f"this server takes no per-request seed: {CHUNKED_PREFILL_SEEDS}, and it runs on CPU with chunked "
            "prefill; its samples are drawn unseeded (not reproducible) and a request with a seed is refused. Start "
            "it with --no-enable-chunked-prefill (seakr serve's default on CPU) for seeded samples"
        )
    packaged = packaged_model_served(str(engine.facts.model), str(engine.facts.weights))
    if packaged is not None and engine.dtype is not None and engine.dtype != REFERENCE_DTYPE:
        warnings.append(
            f"this server runs {packaged.name} in {engine.dtype}; seakr's shipped calibration profiles for it "
            f"were made in {REFERENCE_DTYPE}, so their delta may not fit its uncertainties: start it without --dtype "
            f"(seakr serve runs a packaged model in {REFERENCE_DTYPE}), or calibrate against it (seakr calibrate "
            "--server URL --dataset QUESTIONS.jsonl)"
        )
    return warnings


def endpoint_plugin() -> SeaKREndpointPlugin:
    """The ``vllm.endpoint_plugins`` entry point's factory."""
    return SeaKREndpointPlugin()


def _router() -> APIRouter:
    """seakr's routes under ``/v1/seakr``, each handler wrapped by ``_endpoint``."""
    router = APIRouter(prefix="/v1/seakr", tags=["seakr"])
    for method, path, name, handle in _ROUTES:
        router.add_api_route(path, _endpoint(handle), methods=[method], name=name)
    return router


def _endpoint(handle: Handler) -> Callable[[Request], Awaitable[Any]]:
    """The route answering with ``handle(request, engine, body)``: 503 while the engine is missing, and its failures
    answered as JSON errors (400 for a bad request, 503 when overloaded, 500 otherwise) so the server goes on."""

    async def endpoint(request: Request) -> Any:
        engine = getattr(request.app.state, "seakr", None)
        if engine is None:
            return _error(request, 503, getattr(request.app.state, "seakr_error", "seakr is not initialised"))
        try:
            body = await _json_body(request)
            return await _unless_disconnected(request, handle(request, engine, body))
        except BadRequest as exc:
            return _error(request, 400, str(exc))
        except Overloaded as exc:
            return _error(request, 503, str(exc), exc.retry_after)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # the server goes on; the client learns why
            log.exception("seakr request failed")
            return _error(request, 500, f"{type(exc).__name__}: {exc}")

    return endpoint


async def _json_body(request: Request) -> Any:
    """A POST's JSON body (``None`` for a GET); a body that is not JSON is a bad request."""
    if request.method != "POST":
        return None
    try:
        return await request.json()
    except Exception:
        raise BadRequest("the request body is not valid JSON") from None


def _error(request: Request, status: int, message: str, retry_after: int | None = None) -> JSONResponse:
    """An OpenAI-style JSON error, naming the replica that answered (behind a balancer: which server said it)."""
    kind = {400: "BadRequestError", 503: "ServiceUnavailableError"}.get(status, "InternalServerError")
    headers = None if retry_after is None else {"Retry-After": str(retry_after)}
    body = {"message": message, "type": kind, "code": status}
    replica = getattr(request.app.state, "seakr_replica", None)
    return JSONResponse({"error": {**body, **({"replica": replica} if replica else {})}}, status, headers=headers)


async def _info(raw_request: Request, engine: Any, _: Any) -> Any:
    """What the server runs, its limits and its load: what a client checks before it sends work."""
    limits = raw_request.app.state.seakr_limits
    budget = raw_request.app.state.seakr_budget
    return {
        **engine.info(),
        **_replica(raw_request),
        "limits": dict(limits.__dict__),
        "samples_in_flight": budget.in_flight,
    }


async def _generate(raw_request: Request, engine: Any, body: Any) -> Any:
    """Greedy and sampled continuations with their uncertainties, admitted against the server's sample budget."""
    request = parse_generate(body, raw_request.app.state.seakr_limits)
    config = request.config
    _check_servable(request, engine)
    prompts = request.prompts or [_chat_prompt(engine.tokenizer, m) for m in request.messages or []]
    ids = _prompt_ids(engine, prompts, config.max_tokens)
    async with raw_request.app.state.seakr_budget.admit(len(prompts) * (config.k + 1)):
        outputs = await asyncio.gather(*(engine.generate(p, i, config) for p, i in zip(prompts, ids, strict=True)))
    result = [_output_json(engine, request, output) for output in outputs]
    return {"model": engine.facts.model, **_replica(raw_request), "outputs": result}


def _check_servable(request: GenerateRequest, engine: Any) -> None:
    """Refuse a generate request this server cannot answer as asked: a seed it cannot take, or another read-out."""
    config = request.config
    if request.seed is not None and not engine.takes_seeds:
        raise BadRequest(
            f"seed={request.seed!r}: this server takes no per-request seed ({CHUNKED_PREFILL_SEEDS}, and it runs "
            "on CPU with chunked prefill): leave seed out (its samples are then not reproducible), or restart it "
            "with --no-enable-chunked-prefill (seakr serve's default on CPU)"
        )
    if config.layer is not None and config.layer != engine.layer or config.source != engine.source:
        raise BadRequest(
            f"this server reads layer {engine.layer} ({engine.source}); the request asks for layer "
            f"{config.layer} ({config.source}): leave layer/source out, or start a server with "
            "SEAKR_SERVE_LAYER / SEAKR_SERVE_SOURCE set to them"
        )


def _prompt_ids(engine: Any, prompts: list[str], max_tokens: int) -> list[list[int]]:
    """Each prompt's token ids; a prompt leaving no room for ``max_tokens`` in the model's context is refused."""
    ids = [list(engine.tokenizer(p).input_ids) for p in prompts]
    limit = engine.facts.max_context - max_tokens - 1
    for i, p in enumerate(ids):
        if len(p) > limit:
            raise BadRequest(
                f"prompt {i} has {len(p)} tokens: with max_tokens={max_tokens} the limit (the model's "
                f"context of {engine.facts.max_context} tokens) leaves room for {limit}; shorten it"
            )
    return ids


def _output_json(engine: Any, request: GenerateRequest, output: Any) -> dict[str, Any]:
    """One prompt's generation in the reply: its continuations, its uncertainty scores, and the vectors asked for."""
    scores = engine.scores(output, request.estimators, request.alpha)
    with_vectors = request.return_vectors and output.samples
    item = {
        "prompt": output.prompt,
        "prompt_token_ids": output.prompt_token_ids,
        "greedy": continuation_to_json(output.greedy, with_lse=True),
        "samples": [continuation_to_json(s) for s in output.samples],
        "layer": output.layer,
        "source": output.source,
        "uncertainty": {name: uncertainty_to_json(u) for name, u in scores.items()},
        "eos_vectors": encode_vectors(output.eos_vectors(), request.vector_dtype) if with_vectors else None,
    }
    if request.config.greedy_vector and output.greedy.eos_vector is not None:  # what a state probe reads
        item["greedy_vector"] = encode_vectors(output.greedy.eos_vector[None, :], request.vector_dtype)
    return item


async def _tokenize(raw_request: Request, engine: Any, body: Any) -> Any:
    request = parse(TokenizeRequest, body)
    special = request.add_special_tokens
    return {"token_ids": [list(engine.tokenizer(t, add_special_tokens=special).input_ids) for t in request.texts]}


async def _detokenize(raw_request: Request, engine: Any, body: Any) -> Any:
    request = parse(DetokenizeRequest, body, vocab_size=engine.facts.vocab_size)
    skip = request.skip_special_tokens
    return {"texts": [engine.tokenizer.decode(r, skip_special_tokens=skip) for r in request.token_ids]}


async def _chat_prompt_route(raw_request: Request, engine: Any, body: Any) -> Any:
    request = parse(ChatPromptRequest, body)
    return {"prompt": _chat_prompt(engine.tokenizer, [m.model_dump() for m in request.messages])}


async def _vectors(raw_request: Request, engine: Any, body: Any) -> Any:
    request = parse(
        VectorsRequest,
        body,
        limits=raw_request.app.state.seakr_limits,
        max_context=engine.facts.max_context,
        vocab_size=engine.facts.vocab_size,
    )
    layer, source = request.layer or engine.layer, request.source or engine.source
    if layer != engine.layer or source != engine.source:
        raise BadRequest(f"this server reads layer {engine.layer} ({engine.source})")
    return {"vectors": encode_vectors(await engine.vectors(request.sequences), "float32"), **_replica(raw_request)}


_ROUTES: tuple[tuple[str, str, str, Handler], ...] = (
    ("GET", "/info", "info", _info),
    ("POST", "/generate", "generate", _generate),
    ("POST", "/tokenize", "tokenize", _tokenize),
    ("POST", "/detokenize", "detokenize", _detokenize),
    ("POST", "/chat_prompt", "chat_prompt", _chat_prompt_route),
    ("POST", "/vectors", "vectors", _vectors),
)
"""(method, path under /v1/seakr, route name, handler): the routes docs/serving.md lists."""


def _replica(request: Request) -> dict[str, str]:
    """Which server answered and what it is (``serving.replicas``): behind a load balancer, the client checks that
    every reply comes from a replica like the one it connected to, and names it when not."""
    state = request.app.state
    found = {"replica": getattr(state, "seakr_replica", None), "fingerprint": getattr(state, "seakr_fingerprint", None)}
    return {k: v for k, v in found.items() if v is not None}  # an app built without init_state has neither


async def _unless_disconnected(request: Request, work: Any) -> Any:
    """Run ``work``, cancelling it (and so its engine requests) when the client hangs up.  The body has been read, so
    the only message left to receive is the disconnect."""

    async def disconnected() -> None:
        while (await request.receive())["type"] != "http.disconnect":
            pass

    task = asyncio.ensure_future(work)
    watcher = asyncio.ensure_future(disconnected())
    try:
        await asyncio.wait([task, watcher], return_when=asyncio.FIRST_COMPLETED)
    finally:
        watcher.cancel()
        if not task.done():
            task.cancel()
            log.info("client disconnected; its engine requests are aborted")
    return None if task.cancelled() else task.result()


def _chat_prompt(tokenizer: Any, messages: list[dict[str, str]]) -> str:
    if not getattr(tokenizer, "chat_template", None):
        raise BadRequest("this model's tokenizer has no chat template: send 'prompts' instead of 'messages'")
    try:
        return chat_template_prompt(tokenizer, messages)
    except Exception as exc:
        raise BadRequest(f"the chat template rejected these messages: {exc}") from None
