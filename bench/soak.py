"""Soak: one ``seakr serve`` and many client processes for a long run, with the server killed in the middle.

Starts ``seakr serve MODEL`` on a free 127.0.0.1 port, builds a BM25 index of the HotpotQA corpus, and runs
``--clients`` processes of ``bench/soak_client.py`` (SeaKRChain questions, plain chat completions, seakr's generate
route with estimators, about 10% bad requests) for ``--minutes``.  At ``--kill-at`` (a share of the run) the server
gets SIGKILL while clients are mid-request and is started again at once; clients retry through the gap.  The server's
memory (RSS of its process tree) is sampled every ``--sample-seconds``.

With ``--replicas 2`` it runs two replicas behind nginx (``tests/replica_deployment.py``, ``deploy/nginx.conf``), each
on its own core, and kills the second one; clients go through nginx, which sends a request whose replica died to the
other. Every request is numbered per client, so a lost or duplicated result shows (``lost``, ``duplicated``); the
replica that answered each request is counted (``answered_by``).

Prints, and writes as JSON to ``--out``: requests per route and outcome (good requests failed: want 0; bad ones
refused with a 4xx and a message), p50/p95 latency per route, the gap of the restart, and the memory samples.

    python bench/soak.py --minutes 20 --clients 16 --out bench/results/soak.json
    python bench/soak.py --replicas 2 --minutes 10 --clients 16 --out bench/results/soak-replicas.json

Results go to docs/benchmarks.md with the command and the machine.
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

HERE = Path(__file__).resolve().parent
DATA = HERE.parent / "data"
sys.path.insert(0, str(HERE.parent / "tests"))  # the replica launcher the tests use

from replica_deployment import Deployment  # noqa: E402


def _rss_mb(pid: int) -> dict[str, float]:
    """Resident memory of a process and its children, in MB: in all, and by process name (vLLM's API server, its
    engine core and its worker), so that a growth can be placed."""
    by_name: dict[str, float] = {}
    todo = [pid]
    while todo:
        p = todo.pop()
        try:
            rss = int(Path(f"/proc/{p}/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 1e6
            name = Path(f"/proc/{p}/comm").read_text().strip()
            by_name[name] = round(by_name.get(name, 0.0) + rss, 1)
            for task in Path(f"/proc/{p}/task").iterdir():
                todo += [int(c) for c in (task / "children").read_text().split()]
        except (FileNotFoundError, ProcessLookupError, ValueError):
            continue
    return {"rss_mb": round(sum(by_name.values()), 1), "by_process_mb": by_name}


def _percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    if len(values) == 1:
        return round(values[0], 3)
    return round(statistics.quantiles(values, n=100, method="inclusive")[int(q) - 1], 3)


def _summary(records: list[dict], restarts: list[dict], memory: list[dict], args: argparse.Namespace) -> dict:
    routes: dict[str, dict] = {}
    for r in records:
        entry = routes.setdefault(r["route"], {"requests": 0, "ok": 0, "refused": 0, "failed": 0, "latencies": []})
        entry["requests"] += 1
        entry[r["outcome"]] += 1
        if r["outcome"] != "failed":
            entry["latencies"].append(r["latency_s"])
    for entry in routes.values():
        latencies = entry.pop("latencies")
        entry["p50_s"], entry["p95_s"] = _percentile(latencies, 50), _percentile(latencies, 95)
    good = [r for r in records if r["route"] != "bad"]
    numbers: dict[int, list[int]] = {}
    for r in records:
        numbers.setdefault(r["client"], []).append(r["n"])
    answered_by: dict[str, int] = {}
    for r in records:
        if r.get("replica"):
            answered_by[r["replica"]] = answered_by.get(r["replica"], 0) + 1
    failures = [r for r in records if r["outcome"] == "failed"]
    return {
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {sys.version.split()[0]}",
        "settings": {
            "model": args.model,
            "replicas": args.replicas,
            "clients": args.clients,
            "minutes": args.minutes,
            "kill_at": args.kill_at,
        },
        "good_requests": len(good),
        "good_failed": sum(r["outcome"] == "failed" for r in good),
        "bad_requests": len(records) - len(good),
        "bad_not_refused": sum(r["route"] == "bad" and r["outcome"] != "refused" for r in records),
        # a request without its result (a number missing in a client's sequence), or a result written twice
        "lost": sum(len(set(range(max(ns) + 1)) - set(ns)) for ns in numbers.values()),
        "duplicated": sum(len(ns) - len(set(ns)) for ns in numbers.values()),
        "answered_by": answered_by,
        "routes": routes,
        "restarts": restarts,
        "memory_mb": memory,
        "failures": [{k: r.get(k) for k in ("route", "start", "error", "status")} for r in failures[:20]],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default="smollm2")
    parser.add_argument("--replicas", type=int, default=1, help="replicas behind nginx (1: one server, no balancer)")
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--minutes", type=float, default=20)
    parser.add_argument("--kill-at", type=float, default=0.5, help="share of the run at which to kill (0: never)")
    parser.add_argument("--sample-seconds", type=float, default=60)
    parser.add_argument("--out", type=Path, default=HERE / "results" / "soak.json")
    args = parser.parse_args()
    from seakr_integrations.retrieval.bm25 import BM25Index

    with tempfile.TemporaryDirectory() as tmp:
        index = BM25Index.build(DATA / "corpus_hotpotqa.jsonl", Path(tmp) / "index", progress=False)
        deployment = Deployment(
            args.model, args.replicas, Path(tmp), extra=("--dtype", "float32", "--max-model-len", "2048")
        )
        with deployment:
            url = deployment.url
            print(json.dumps({"url": url, "replicas": deployment.ports}), flush=True)
            started = time.time()
            until = started + args.minutes * 60
            outs = [Path(tmp) / f"client{i}.jsonl" for i in range(args.clients)]
            clients = [
                subprocess.Popen(
                    [sys.executable, str(HERE / "soak_client.py"), url, str(index.path), "--until", str(until)]
                    + ["--seed", str(i), "--out", str(out)],
                    stderr=(Path(tmp) / f"client{i}.err").open("w"),
                )
                for i, out in enumerate(outs)
            ]
            kill_at = started + args.kill_at * args.minutes * 60 if args.kill_at else None
            victim = args.replicas - 1  # the only server, or the last replica behind nginx
            memory, restarts, next_sample = [], [], time.time()
            try:
                while any(c.poll() is None for c in clients):
                    now = time.time()
                    if now >= next_sample:
                        pids = deployment.pids()
                        sample = {name: _rss_mb(pid) for name, pid in pids.items() if name != "nginx"}
                        memory.append({"minute": round((now - started) / 60, 1), **sample})
                        print(json.dumps(memory[-1]), flush=True)
                        next_sample = max(next_sample + args.sample_seconds, now + 1)  # no catch-up after a restart
                    if kill_at is not None and now >= kill_at:
                        deployment.kill(victim)
                        killed = time.time()
                        ready = deployment.start(victim)
                        restart = {
                            "replica": victim,
                            "minute": round((killed - started) / 60, 1),
                            "gap_s": round(ready, 1),
                        }
                        restarts.append(restart)
                        print(json.dumps({"restart": restart}), flush=True)
                        kill_at = None
                    time.sleep(1)
            finally:
                for c in clients:
                    if c.poll() is None:
                        c.kill()
        crashed = [i for i, c in enumerate(clients) if c.returncode != 0]
        if crashed:
            print(f"client processes that exited with an error: {crashed}", file=sys.stderr)
            print((Path(tmp) / f"client{crashed[0]}.err").read_text()[-3000:], file=sys.stderr)
        records = [json.loads(line) for out in outs if out.exists() for line in out.open()]
        result = _summary(records, restarts, memory, args)
        result["client_processes_crashed"] = len(crashed)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps({k: v for k, v in result.items() if k not in ("failures",)}, indent=2))


if __name__ == "__main__":
    main()
