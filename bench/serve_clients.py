"""Benchmark ``seakr serve`` (one server, or replicas behind nginx) under 1, 4 and 8 concurrent client processes.

Starts ``seakr serve MODEL`` on a free 127.0.0.1 port, then for each client count runs that many processes at once,
each answering its own questions (``--per-client``, consecutive slices of data/hotpotqa_dev.jsonl) with
``SeaKRChain`` (a LangChain retriever over a BM25 index of the HotpotQA corpus, ``ChatSeaKR(base_url=...)``), one
after another; every client of a count starts asking at the same moment, once all have started (their imports and
index are not the server's time: ``start_up_s``).  Prints one JSON line per client count: questions per minute, wall
time, generated tokens per second (greedy continuations and samples, as ``SeaKRResult.generated_tokens`` counts
them, summed over the clients' traces), and the CPU seconds the clients used while asking (``clients_cpu_s``: they
share the two cores with the server) and the server's processes used (``server_cpu_s``); then the ratio of the most
clients to one; then the per-call overhead of the HTTP path: the median time of a greedy one-token call through
``RemoteBackend`` against the same call in-process on ``VLLMBackend``.

    python bench/serve_clients.py --clients 1 4 8 --per-client 5                        # light settings, SmolLM2
    python bench/serve_clients.py --replicas 1 2 --clients 8 16 --per-client 2 --no-overhead  # 1 server, then 2

``--replicas 1 2`` measures one server, then two behind nginx (``tests/replica_deployment.py``, ``deploy/nginx.conf``),
each bound to its own share of the cores, with the same clients; ``server_cpu_s`` is per replica (and nginx's), and the
ratio of each deployment's questions per minute to the first's is printed per client count.
    python bench/serve_clients.py --model qwen --settings evaluation --roof --clients 1 4 8 --per-client 4

``--settings light`` (k=10, 64 tokens, 4 exemplars, at most 3 steps) keeps it to minutes on a CPU; ``evaluation``
is the request shape of ``bench/engine_roof.py`` (k=10, 64 tokens, the ten HotpotQA exemplars, the shipped delta).
``--roof`` first runs ``bench/engine_roof.py`` in a process of its own (the roof with SeaKR's requests at 16
questions per call, then ``answer_many`` on 16 questions, on the same model), before the server starts, and puts
each client count's tokens per second next to that roof.  ``--replay-roof`` instead runs it with ``--replay``:
``answer_many`` on the questions of the most clients (``max_in_flight`` = that many clients), then the engine alone on
the requests it sent; the client count that asks those same questions is put next to that replay (seconds and tokens
per second), so served SeaKR is compared with the engine doing the same work.  ``--no-overhead`` skips the parity
and per-call measurements.  Results go to docs/benchmarks.md with the command and the machine.

    python bench/serve_clients.py --model qwen --settings evaluation --replay-roof --clients 8 --per-client 2 \
        --no-overhead
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "data"
sys.path.insert(0, str(ROOT / "tests"))  # the replica launcher the tests use

from replica_deployment import Deployment  # noqa: E402

SETTINGS = {
    "light": {"k": 10, "max_tokens": 64, "num_exemplars": 4, "max_steps": 3},
    "evaluation": {"k": 10, "max_tokens": 64, "exemplar_style": "hotpotqa"},
}

CLIENT = """
import json, sys, time
from langchain_seakr import ChatSeaKR, PassageIndexRetriever, SeaKRChain
from seakr_integrations.reasoning import SeaKRConfig
url, index, settings, questions = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), json.loads(sys.argv[4])
retriever = PassageIndexRetriever.from_path(index)
chain = SeaKRChain(
    retriever=retriever, llm=ChatSeaKR(base_url=url), config=SeaKRConfig(**settings), return_trace=True
)
print("ready", flush=True)
sys.stdin.readline()  # every client asks from the same moment, its start-up done
cpu = time.process_time()
tokens = lm_calls = 0
for q in questions:
    trace = chain.invoke(q)["trace"]
    tokens, lm_calls = tokens + trace["generated_tokens"], lm_calls + trace["lm_calls"]
print(json.dumps({"tokens": tokens, "lm_calls": lm_calls, "cpu_s": time.process_time() - cpu}))
"""


def _server_cpu(pid: int) -> dict[str, float]:
    """CPU seconds so far of the server's processes (the API server, vLLM's engine core and worker), by name."""
    import psutil

    root = psutil.Process(pid)
    out: dict[str, float] = {}
    for proc in [root, *root.children(recursive=True)]:
        try:
            times, name = proc.cpu_times(), proc.name()
        except psutil.NoSuchProcess:
            continue
        out[name] = out.get(name, 0.0) + times.user + times.system
    return out


def _servers_cpu(deployment: Deployment) -> dict[str, dict[str, float]]:
    """``_server_cpu`` of each replica (``replica0``...) and of nginx."""
    return {name: _server_cpu(pid) for name, pid in deployment.pids().items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default="smollm2")
    parser.add_argument(
        "--clients", type=int, nargs="*", default=[1, 4, 8], help="client counts (none: parity and overhead only)"
    )
    parser.add_argument("--per-client", type=int, default=5)
    parser.add_argument(
        "--replicas",
        type=int,
        nargs="+",
        default=[1],
        help="deployments to measure in turn: N servers behind nginx, each on its own share of the cores (1: no nginx)",
    )
    parser.add_argument("--settings", choices=sorted(SETTINGS), default="light", help="the clients' SeaKRConfig")
    parser.add_argument("--roof", action="store_true", help="first measure the engine's roof (bench/engine_roof.py)")
    parser.add_argument(
        "--replay-roof", action="store_true", help="first answer_many and the engine alone on its requests"
    )
    parser.add_argument("--no-overhead", action="store_true", help="skip the parity and per-call measurements")
    parser.add_argument(
        "--dtype", default="float32", help="engine dtype of server and in-process engine (float32: CPUs without bf16)"
    )
    args = parser.parse_args()

    from seakr_integrations.retrieval.bm25 import BM25Index

    questions = [json.loads(line)["question"] for line in (DATA / "hotpotqa_dev.jsonl").open()]
    machine = f"{platform.machine()}, {os.cpu_count()} cores, Python {sys.version.split()[0]}"
    settings = SETTINGS[args.settings]
    with tempfile.TemporaryDirectory() as tmp:
        roof = _roof(args.model, args.dtype, Path(tmp) / "roof.json") if args.roof else None
        replayed = None
        if args.replay_roof and args.clients:
            most = max(args.clients)
            replayed = _replay(args.model, args.dtype, most * args.per_client, most, Path(tmp) / "replay.json")
        index = BM25Index.build(DATA / "corpus_hotpotqa.jsonl", Path(tmp) / "index", progress=False)
        rates: dict[tuple[int, int], float] = {}
        far = remote_s = None
        for replicas in args.replicas:
            folder = Path(tmp) / f"replicas{replicas}"
            folder.mkdir()
            with Deployment(args.model, replicas, folder, extra=("--dtype", args.dtype)) as deployment:
                for n in args.clients:
                    record = _clients(deployment, n, questions, index.path, settings, args.per_client)
                    rates[replicas, n] = record["questions_per_minute"]
                    tokens, wall = record["tokens"], record["wall_s"]
                    if roof:
                        record["ratio_to_roof"] = round(tokens / wall / roof["roof_tokens_per_s"], 3)
                    if replayed and replayed["questions"] == n * args.per_client:
                        record["replay_s"] = replayed["seconds"]
                        record["replay_tokens_per_s"] = replayed["tokens_per_s"]
                        record["replay_over_clients_speed"] = round(replayed["seconds"] / wall, 3)
                        record["tokens_per_s_over_replay"] = round(tokens / wall / replayed["tokens_per_s"], 3)
                    print(json.dumps({**record, "settings": settings, "machine": machine}), flush=True)
                if not args.no_overhead and far is None:
                    far, remote_s = _measure(lambda url=deployment.url: _remote(url))
        for replicas in args.replicas:
            counts = sorted(n for r, n in rates if r == replicas)
            if 1 in counts and counts[-1] > 1:
                ratio = round(rates[replicas, counts[-1]] / rates[replicas, 1], 2)
                print(json.dumps({"replicas": replicas, "ratio": f"{counts[-1]} clients / 1", "value": ratio}))
        if len(args.replicas) > 1:
            fewest = min(args.replicas)
            for (replicas, n), rate in sorted(rates.items()):
                if replicas != fewest:
                    ratio = round(rate / rates[fewest, n], 2)
                    print(json.dumps({"clients": n, "ratio": f"{replicas} replicas / {fewest}", "value": ratio}))
        if far is not None:
            near, local_s = _measure(lambda: _in_process(args.model, args.dtype))  # with the server gone
            print(json.dumps(_compare(far, remote_s, near, local_s)))


def _clients(deployment: Deployment, n: int, questions: list[str], index: Path, settings: dict, per_client: int):
    """``n`` client processes asking ``deployment`` at once, each its own ``per_client`` questions: the record."""
    replica_urls = [deployment.replica_url(i) for i in range(len(deployment.ports))]
    launched = time.perf_counter()
    procs = []
    for i in range(n):
        mine = questions[i * per_client : (i + 1) * per_client]
        argv = [sys.executable, "-c", CLIENT, deployment.url, str(index), json.dumps(settings), json.dumps(mine)]
        procs.append(
            subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        )
    for p in procs:  # the clients' start-up (imports, the index) is not the server's time
        if p.stdout.readline().strip() != "ready":
            raise SystemExit(p.communicate()[1][-2000:])
    fetched, cpu = _fetch_counts(replica_urls), _servers_cpu(deployment)
    started = time.perf_counter()
    for p in procs:
        p.stdin.write("go\n")
        p.stdin.flush()
    done = [p.communicate() for p in procs]
    wall = time.perf_counter() - started
    server_cpu = {
        process: {k: round(v - cpu.get(process, {}).get(k, 0.0), 1) for k, v in now.items()}
        for process, now in _servers_cpu(deployment).items()
    }
    failed = [err[-2000:] for p, (_, err) in zip(procs, done, strict=True) if p.returncode != 0]
    if failed:
        raise SystemExit(failed[0])
    counts = [json.loads(out.strip().splitlines()[-1]) for out, _ in done]
    tokens = sum(c["tokens"] for c in counts)
    return {
        "replicas": len(replica_urls),
        "clients": n,
        "questions": n * per_client,
        "wall_s": round(wall, 1),
        "start_up_s": round(started - launched, 1),
        "clients_cpu_s": round(sum(c["cpu_s"] for c in counts), 1),
        # CPU seconds of each replica's processes (and nginx's) while the clients asked: each replica's share
        "server_cpu_s": server_cpu,
        "questions_per_minute": round(n * per_client / wall * 60, 2),
        "tokens": tokens,
        "lm_calls": sum(c["lm_calls"] for c in counts),
        "tokens_per_s": round(tokens / wall, 2),
        # the servers' fetches of read-out vectors from vLLM's workers (serving/worker_fetch.py), and the clients'
        # requests per route (tokenizer round trips beside the generate calls)
        **{k: v - fetched.get(k, 0.0) for k, v in _fetch_counts(replica_urls).items()},
    }


PARITY_CONFIG = {"k": 10, "max_tokens": 32, "stop": ("\n",), "seed": 7}
ESTIMATORS = ("eigenscore", "perplexity", "ln_entropy", "multi_perplexity")
CALLS = 20


def _fetch_counts(urls: list[str]) -> dict[str, float]:
    """The servers' read-outs and worker round trips so far, and their HTTP requests per seakr route
    (``requests_generate``, ``requests_detokenize``...), from vLLM's /metrics, summed over the replicas."""
    import httpx

    counts = {"seakr_read_outs_total": 0.0, "seakr_worker_round_trips_total": 0.0}
    lines = [line for url in urls for line in httpx.get(url + "/metrics", timeout=30).text.splitlines()]
    for line in lines:
        name, _, value = line.rpartition(" ")
        if name in counts:
            counts[name] += float(value)
        elif name.startswith("http_requests_total{") and 'handler="/v1/seakr/' in name:
            route = name.split('handler="/v1/seakr/', 1)[1].split('"', 1)[0]
            counts[f"requests_{route}"] = counts.get(f"requests_{route}", 0.0) + float(value)
    return counts


def _engine_roof(model: str, dtype: str, out: Path, *options: str) -> dict[str, object]:
    """``bench/engine_roof.py`` with ``options`` in a process of its own (its measurements are printed as they come;
    no prefill probe); its summary."""
    command = [sys.executable, str(ROOT / "bench" / "engine_roof.py"), "--model", model, "--dtype", dtype, *options]
    subprocess.run([*command, "--prefill-probe", "0", "--out", str(out)], check=True)
    return json.loads(out.read_text())


def _roof(model: str, dtype: str, out: Path) -> dict[str, object]:
    """The roof with SeaKR's requests at 16 questions per call, then ``answer_many`` on 16 questions."""
    return _engine_roof(model, dtype, out, "--params", "seakr", "--batch-sizes", "16")


def _replay(model: str, dtype: str, questions: int, in_flight: int, out: Path) -> dict[str, object]:
    """``answer_many`` and the engine alone on its requests (a token roof of batch 1 only, as the script needs one):
    the replay's record, with the question count."""
    options = ["--replay", "--questions", str(questions), "--in-flight", str(in_flight)]
    summary = _engine_roof(model, dtype, out, *options, "--batch-sizes", "1", "--repeats", "1")
    replayed = next(m for m in summary["measurements"] if m["kind"] == "replay")  # type: ignore[union-attr]
    return {**replayed, "questions": questions}


def _remote(url: str) -> object:
    from seakr_integrations.backends.remote import RemoteBackend

    return RemoteBackend(url)


def _in_process(model: str, dtype: str) -> object:
    from seakr_integrations.backends.vllm import VLLMBackend

    return VLLMBackend(model, dtype=dtype)


def _measure(open_backend: object) -> tuple[list, float]:
    """The parity prompts' outputs and the median seconds of a greedy one-token call on one back-end.

    Parity: the last 5 HotpotQA questions, same seed and settings on both paths.  Overhead: each path is timed alone
    (the in-process engine after the server has stopped), so the two never share the 2 cores.
    """
    from seakr_integrations.params import SamplingConfig

    questions = [json.loads(line)["question"] for line in (DATA / "hotpotqa_dev.jsonl").open()][-5:]
    prompts = [f"Question: {q}\nAnswer:" for q in questions]
    with open_backend() as backend:  # type: ignore[operator]
        outputs = backend.generate(prompts, SamplingConfig(**PARITY_CONFIG))
        times = []
        for _ in range(CALLS):
            t = time.perf_counter()
            backend.generate([prompts[0]], k=0, max_tokens=1)
            times.append(time.perf_counter() - t)
    return outputs, statistics.median(times)


def _compare(far: list, remote_s: float, near: list, local_s: float) -> dict[str, object]:
    """Whether both paths produced the same tokens, each estimator's largest difference, and the HTTP overhead."""
    from seakr_integrations.uncertainty.estimate import estimate

    pairs = list(zip(far, near, strict=True))
    same_tokens = all(
        a.greedy.token_ids == b.greedy.token_ids
        and [s.token_ids for s in a.samples] == [s.token_ids for s in b.samples]
        for a, b in pairs
    )
    max_diff = {
        name: max(abs(estimate(a, name).value - estimate(b, name).value) for a, b in pairs) for name in ESTIMATORS
    }
    return {
        "parity": {
            "prompts": len(pairs),
            "settings": PARITY_CONFIG,
            "same_tokens": same_tokens,
            "max_abs_difference": max_diff,
        },
        "one_token_call_ms": {
            "remote": round(remote_s * 1000, 1),
            "in_process": round(local_s * 1000, 1),
            "http_overhead": round((remote_s - local_s) * 1000, 1),
            "calls": CALLS,
        },
    }


if __name__ == "__main__":
    main()
