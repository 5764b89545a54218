"""One client process of the soak (bench/soak.py): a mix of requests against one ``seakr serve`` until a deadline.

The mix, by share of requests: SeaKR questions through ``SeaKRChain`` with ``ChatSeaKR(base_url=...)`` (30%), plain
``/v1/chat/completions`` calls (30%), ``/v1/seakr/generate`` with estimators (30%) and bad requests (10%).  Every
request is one JSON line in the output file, written as it ends: its route, when it started, its latency, its
outcome (``ok``, ``refused`` for a bad request answered 4xx with a message, or ``failed``) and the error.

A good request whose server is away (a restart) is retried the way ``RemoteBackend`` retries: with backoff, for up to
``--retry-seconds``.  So a request that lands in the gap is ``ok`` when the server came back in time, and counted as
``failed`` otherwise.

    python bench/soak_client.py URL INDEX --until EPOCH --seed N --out FILE
"""

from __future__ import annotations

import argparse
import itertools
import json
import random
import time
import traceback
from pathlib import Path
from typing import Any

import httpx

DATA = Path(__file__).resolve().parents[1] / "data"
SETTINGS = {"k": 10, "max_tokens": 32, "num_exemplars": 4, "max_steps": 3}
"""SeaKRConfig.light()'s sampling with at most three steps: a question takes seconds, not minutes, on a CPU."""

BAD = [
    ("bad JSON", "/v1/seakr/generate", b"{not json"),
    ("k too large", "/v1/seakr/generate", {"prompts": ["Q"], "k": 100000}),
    ("unknown estimator", "/v1/seakr/generate", {"prompts": ["Q"], "estimators": ["nope"]}),
    ("prompts as a string", "/v1/seakr/generate", {"prompts": "Q"}),
    ("empty prompts", "/v1/seakr/generate", {"prompts": []}),
    ("negative max_tokens", "/v1/seakr/generate", {"prompts": ["Q"], "max_tokens": -5}),
    ("temperature NaN", "/v1/seakr/generate", {"prompts": ["Q"], "temperature": "NaN"}),
    ("token id out of range", "/v1/seakr/detokenize", {"token_ids": [[999999999]]}),
    ("empty sequences", "/v1/seakr/vectors", {"sequences": []}),
    ("chat without messages", "/v1/chat/completions", {"model": "x"}),
]
"""Requests a careless or hostile client sends: each must be answered 4xx with a message, and the server go on."""


def _post(client: httpx.Client, url: str, body: Any, retry_seconds: float) -> httpx.Response:
    """POST with ``RemoteBackend``'s policy: connection errors and 502/503/504 retried with backoff (honouring
    ``Retry-After``) until ``retry_seconds`` have passed."""
    started, delay = time.monotonic(), 0.5
    while True:
        try:
            if isinstance(body, bytes):
                response = client.post(url, content=body, headers={"content-type": "application/json"})
            else:
                response = client.post(url, json=body)
            if response.status_code not in (502, 503, 504):
                return response
            wait = float(response.headers.get("Retry-After", delay))
        except httpx.TransportError:
            wait = delay
        if time.monotonic() - started + wait > retry_seconds:
            raise RuntimeError(f"POST {url}: no answer within {retry_seconds:g} s of retries")
        time.sleep(wait)
        delay = min(delay * 2, 8.0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("url")
    parser.add_argument("index")
    parser.add_argument("--until", type=float, required=True, help="epoch seconds at which to stop starting requests")
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--retry-seconds", type=float, default=600.0, help="as ChatSeaKR's default timeout")
    args = parser.parse_args()

    from langchain_seakr import ChatSeaKR, PassageIndexRetriever, SeaKRChain
    from seakr_integrations.reasoning import SeaKRConfig

    rng = random.Random(args.seed)
    questions = [json.loads(line)["question"] for line in (DATA / "hotpotqa_dev.jsonl").open()]
    chain = SeaKRChain(
        retriever=PassageIndexRetriever.from_path(args.index),
        llm=ChatSeaKR(base_url=args.url, timeout=600),
        config=SeaKRConfig(**SETTINGS),
    )
    client = httpx.Client(timeout=600)
    model = client.get(args.url + "/v1/models").json()["data"][0]["id"]
    with args.out.open("a") as out:
        for n in itertools.count():
            if time.time() >= args.until:
                break
            draw = rng.random()
            route = "bad" if draw < 0.1 else "chain" if draw < 0.4 else "chat" if draw < 0.7 else "generate"
            # numbered: a request whose result is lost, or written twice, shows in the soak's summary
            record: dict[str, Any] = {"client": args.seed, "n": n, "route": route, "start": time.time()}
            started = time.perf_counter()
            try:
                record.update(_one(route, rng, args, client, chain, model, questions))
            except Exception as exc:  # counted, never fatal: the soak goes on
                record.update(outcome="failed", error=f"{type(exc).__name__}: {exc}"[:500])
                record["trace"] = traceback.format_exc()[-1500:]
            record["latency_s"] = round(time.perf_counter() - started, 3)
            out.write(json.dumps(record) + "\n")
            out.flush()


def _one(route: str, rng: random.Random, args: Any, client: httpx.Client, chain: Any, model: str, questions: list):
    if route == "chain":
        answer = chain.invoke(rng.choice(questions))  # the answer, as a string (SeaKRChain's output)
        ok = isinstance(answer, str) and bool(answer.strip())
        return {"outcome": "ok" if ok else "failed", "error": None if ok else f"empty answer: {answer!r}"[:300]}
    if route == "chat":
        body = {"model": model, "messages": [{"role": "user", "content": rng.choice(questions)}], "max_tokens": 16}
        response = _post(client, args.url + "/v1/chat/completions", body, args.retry_seconds)
        ok = response.status_code == 200 and response.json()["choices"][0]["message"]["content"] is not None
        return {"outcome": "ok" if ok else "failed", "status": response.status_code, **_replica(response)}
    if route == "generate":
        body = {
            "prompts": [rng.choice(questions)],
            "k": 8,
            "max_tokens": 16,
            "estimators": ["eigenscore", "perplexity"],
        }
        response = _post(client, args.url + "/v1/seakr/generate", body, args.retry_seconds)
        ok = response.status_code == 200 and len(response.json()["outputs"][0]["samples"]) == 8
        return {"outcome": "ok" if ok else "failed", "status": response.status_code, **_replica(response)}
    name, path, body = rng.choice(BAD)
    response = _post(client, args.url + path, body, args.retry_seconds)
    message = ""
    if 400 <= response.status_code < 500:
        error = response.json().get("error") or response.json().get("detail")
        message = error.get("message", "") if isinstance(error, dict) else str(error)
    ok = 400 <= response.status_code < 500 and bool(message)
    return {
        "outcome": "refused" if ok else "failed",
        "status": response.status_code,
        "case": name,
        **_replica(response),
    }


def _replica(response: httpx.Response) -> dict[str, str]:
    """The replica that answered, as nginx names it (deploy/nginx.conf's ``X-SeaKR-Replica``), behind a balancer."""
    replica = response.headers.get("X-SeaKR-Replica")
    return {"replica": replica} if replica else {}


if __name__ == "__main__":
    main()
