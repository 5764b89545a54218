"""Benchmark the Elasticsearch back-end: bulk-indexing throughput, a resumed build, and query latency, one query at a
time and as concurrent rounds (``search_many``).

Runs against the cluster at ``ELASTICSEARCH_URL`` (credentials from the usual variables), or else starts the
noida-db emulator on 127.0.0.1 (then every number is the emulator's and is labelled so: it says nothing about a real
cluster's speed).  The corpus is bench/bm25_index.py's synthetic one (Wikipedia titles and sentences from
data/wiki_summaries_en.jsonl.gz, 80-120 words per passage, seeded), written to a temporary JSONL file and
indexed through the public API (``build_elasticsearch_index``: JSON parsing and validation included), into a fresh
``seakr-bench-...`` index that is deleted afterwards.  The rerun indexes the same file again (every passage is
already there: what resuming a finished build costs).  Queries are bm25_index.py's mix (titles, passage snippets,
LLM-style questions); each is timed alone after a warm-up, then the same queries go in rounds of ``--round``
through ``search_many``, as ``SeaKR.answer_many`` sends them.  Prints one JSON line and a Markdown table row per
corpus size.

``--client-ceiling N`` measures instead what one ``seakr index`` process can send: N passages indexed into a fake
cluster (a separate process that acknowledges every bulk request at once without parsing the documents), so the
time is the client's own: reading and validating the corpus, encoding the bulk bodies, HTTP.

    python bench/es_index_search.py --passages 2000 5000 20000 --queries 24 --round 8
    python bench/es_index_search.py --client-ceiling 200000

Results go to docs/scaling.md together with this command and the machine.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from importlib.metadata import version
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))  # the emulator launcher the tests use

from bm25_index import DATA, make_queries, percentile, write_corpus  # noqa: E402
from es_server import emulator_name, free_port, start_emulator  # noqa: E402


def run_size(url: str, passages: int, args: argparse.Namespace, work: Path, server: str) -> dict:
    from seakr_integrations.retrieval import ElasticsearchRetriever, build_elasticsearch_index
    from seakr_integrations.retrieval.es_connection import ElasticsearchConnection

    corpus = work / f"corpus-{passages}.jsonl"
    rng = random.Random(args.seed)
    sources = write_corpus(corpus, passages, args.seed, Path(args.data), set(rng.sample(range(passages), 200)))
    queries = [q for _, q, _ in make_queries(sources, args.queries + args.warmup, args.seed)]
    conn = ElasticsearchConnection.from_env(url, request_timeout=args.request_timeout)
    index = f"seakr-bench-{uuid.uuid4().hex[:8]}"
    try:
        build = build_elasticsearch_index(
            corpus, index, connection=conn, replicas=0, batch_size=args.batch_size, progress=False
        )
        rerun = build_elasticsearch_index(
            corpus, index, connection=conn, replicas=0, batch_size=args.batch_size, progress=False
        )
        assert build.added == passages and rerun.already_indexed == passages and rerun.num_docs == passages
        with ElasticsearchRetriever(index, connection=conn) as retriever:
            for q in queries[: args.warmup]:
                retriever.search(q, args.k)
            timed = queries[args.warmup :]
            single = []
            for q in timed:
                started = time.perf_counter()
                hits = retriever.search(q, args.k)
                single.append(time.perf_counter() - started)
                assert hits, f"no hits for {q!r}"
            rounds = []
            for at in range(0, len(timed), args.round):
                batch = timed[at : at + args.round]
                started = time.perf_counter()
                results = retriever.search_many(batch, args.k)
                rounds.append((time.perf_counter() - started, len(batch)))
                assert all(results)
    finally:
        client = conn.client()
        client.indices.delete(index=index, ignore_unavailable=True)
        client.close()
    per_query_in_rounds = [t / n for t, n in rounds]
    return {
        "server": server,
        "passages": passages,
        "corpus_mb": round(corpus.stat().st_size / 1e6, 1),
        "build_s": round(build.seconds, 2),
        "build_docs_per_s": round(passages / build.seconds),
        "rerun_s": round(rerun.seconds, 2),
        "rerun_docs_per_s": round(passages / rerun.seconds),
        "queries": len(single),
        "query_median_ms": round(statistics.median(single) * 1000, 1),
        "query_p95_ms": round(percentile(single, 0.95) * 1000, 1),
        "round_size": args.round,
        "round_median_ms": round(statistics.median(t for t, _ in rounds) * 1000, 1),
        "round_per_query_median_ms": round(statistics.median(per_query_in_rounds) * 1000, 1),
        "sequential_over_round": round(sum(single) / sum(t for t, _ in rounds), 2),
    }


def fake_cluster(port: int) -> None:
    """Serve just enough of the REST API for ``build_elasticsearch_index``; bulk requests are acknowledged unread."""
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    state = {"exists": False, "count": 0, "mappings": {}}

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def reply(self, payload: object, status: int = 200) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("X-Elastic-Product", "Elasticsearch")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(data)

        def body(self) -> bytes:
            return self.rfile.read(int(self.headers.get("Content-Length") or 0))

        def do_HEAD(self) -> None:
            self.reply({}, 200 if state["exists"] else 404)

        def bulk(self, body: bytes) -> None:
            n = body.count(b"\n") // 2
            state["count"] += n
            self.reply({"took": 1, "errors": False, "items": [{"create": {"status": 201}}] * n})

        def do_PUT(self) -> None:
            body, path = self.body(), self.path.split("?")[0]
            if path.endswith("/_bulk"):
                self.bulk(body)
                return
            if path.endswith("/_mapping"):
                state["mappings"]["_meta"] = json.loads(body)["_meta"]
            elif "/_" not in path:
                state["exists"], state["mappings"] = True, json.loads(body)["mappings"]
            self.reply({"acknowledged": True})

        def do_GET(self) -> None:
            self.body()
            index = self.path.split("/")[1]
            if self.path.split("?")[0].endswith("/_count"):
                self.reply({"count": state["count"]})
            else:
                self.reply({index: {"mappings": state["mappings"]}})

        def do_POST(self) -> None:
            body, path = self.body(), self.path.split("?")[0]
            if path.endswith("/_bulk"):
                self.bulk(body)
            elif path.endswith("/_count"):
                self.reply({"count": state["count"]})
            else:
                self.reply({"_shards": {"total": 1, "successful": 1, "failed": 0}})

        def log_message(self, *args: object) -> None:
            pass

    ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()


def client_ceiling(passages: int, args: argparse.Namespace, work: Path) -> dict:
    from seakr_integrations.retrieval import build_elasticsearch_index

    corpus = work / f"corpus-{passages}.jsonl"
    write_corpus(corpus, passages, args.seed, Path(args.data), set())
    port = free_port()
    server = subprocess.Popen([sys.executable, __file__, "--serve-fake-cluster", str(port)])
    try:
        time.sleep(1.0)
        build = build_elasticsearch_index(
            corpus, "wiki", url=f"http://127.0.0.1:{port}", batch_size=args.batch_size, progress=False
        )
    finally:
        server.terminate()
        server.wait()
    return {
        "server": "fake cluster (acknowledges at once)",
        "passages": passages,
        "corpus_mb": round(corpus.stat().st_size / 1e6, 1),
        "build_s": round(build.seconds, 2),
        "client_passages_per_s": round(passages / build.seconds),
    }


def main() -> None:
    if sys.argv[1:2] == ["--serve-fake-cluster"]:
        fake_cluster(int(sys.argv[2]))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--passages", type=int, nargs="+", default=[5000, 20000])
    parser.add_argument("--queries", type=int, default=40, help="timed queries per corpus size")
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--round", type=int, default=8, help="queries per search_many call")
    parser.add_argument("--k", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=1000, help="passages per bulk request")
    parser.add_argument("--request-timeout", type=float, default=120.0, help="the emulator is slow at 20k+ passages")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--data", default=str(DATA))
    parser.add_argument("--client-ceiling", type=int, default=None, metavar="N", help="see the module docstring")
    args = parser.parse_args()
    if args.client_ceiling:
        with tempfile.TemporaryDirectory(prefix="seakr-es-bench-") as tmp:
            print(json.dumps(client_ceiling(args.client_ceiling, args, Path(tmp))), flush=True)
        return

    url = os.environ.get("ELASTICSEARCH_URL")
    with tempfile.TemporaryDirectory(prefix="seakr-es-bench-") as tmp:
        work = Path(tmp)
        emulator = None
        if url:
            emulated = os.environ.get("SEAKR_ES_EMULATOR")
            server = f"{emulated} EMULATOR" if emulated else "Elasticsearch cluster"
        else:
            emulator = start_emulator(work / "noida-db")
            url, server = emulator.url, f"{emulator_name()} EMULATOR"
        try:
            print(
                f"# {server} at {url}; {platform.machine()}, {os.cpu_count()} CPUs, "
                f"Python {platform.python_version()}, elasticsearch {version('elasticsearch')}",
                file=sys.stderr,
            )
            for passages in args.passages:
                row = run_size(url, passages, args, work, server)
                print(json.dumps(row), flush=True)
                print(
                    f"| {row['server']} | {passages:,} | {row['build_s']} s ({row['build_docs_per_s']:,} passages/s) | "
                    f"{row['rerun_s']} s ({row['rerun_docs_per_s']:,}/s) | {row['query_median_ms']} ms "
                    f"(p95 {row['query_p95_ms']}) | {row['round_median_ms']} ms per round of {args.round} "
                    f"({row['round_per_query_median_ms']} ms/query, {row['sequential_over_round']}x) |",
                    flush=True,
                )
        finally:
            if emulator is not None:
                emulator.stop()


if __name__ == "__main__":
    main()
