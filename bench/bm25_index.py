"""Benchmark the embedded BM25 index: build time for 200k passages and per-query latency.

The corpus is synthetic but made of real text: each passage takes a Wikipedia lead summary's title (sometimes
with a disambiguation like "(film)"), that summary's first sentence, then random sentences from other summaries
up to 80-120 words (mean 100), all drawn with a seeded RNG from data/wiki_summaries_en.jsonl.gz and streamed
to a temporary JSONL file (only the ~5 MB of source sentences is held in memory).  Builds index that file through
the public API (``BM25Index.build(path, ...)``, so JSON parsing and validation are included), into the same
directory each time (so every build after the first also replaces an index).  Queries are a fixed mix: passage
titles, 6-10 consecutive words from a passage, and LLM-style questions full of query-syntax characters; each is
timed alone after a warm-up.  Prints one JSON line and a Markdown table row.

    python bench/bm25_index.py --passages 200000 --builds 3 --queries 1000 --compare-exhaustive

Results go to docs/benchmarks.md together with this command and the machine.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import platform
import random
import re
import resource
import statistics
import sys
import tempfile
import time
from importlib.metadata import version
from pathlib import Path
from typing import IO

DATA = Path(__file__).resolve().parents[1] / "data" / "wiki_summaries_en.jsonl.gz"
QUALIFIERS = ["film", "album", "band", "novel", "song", "TV series", "footballer", "politician", "river", "ship"]
LLM_TEMPLATES = [
    "What is {title} known for?",
    'Who founded "{title}" and when was it {w1}?',
    "{title}: {w1} {w2} {w3}",
    "Question: Which {w1} is associated with {title}? Answer: (search for [{w2}] AND {w3})",
    'Search query - "{w1} {w2}" -{w3} title:{title}',
    "The {w1} of {title} was {w2}^2 ~ {w3}* OR NOT {w1}",
    "So the answer is {title}. Let me check: {w1}, {w2} and {w3} (according to Wikipedia).",
]


def _open_text(path: Path) -> IO[str]:
    """The file as text, gunzipped when it starts with gzip's magic bytes: data/ ships the summaries compressed, and
    an uncompressed copy (``--data``) still reads."""
    with open(path, "rb") as fh:
        compressed = fh.read(2) == b"\x1f\x8b"
    return gzip.open(path, "rt", encoding="utf-8") if compressed else open(path, encoding="utf-8")


def load_source(data: Path) -> tuple[list[str], list[str], list[int]]:
    """Titles, all sentences, and the index of each title's first sentence in the sentence list."""
    titles, sentences, first = [], [], []
    with _open_text(data) as fh:
        for line in fh:
            row = json.loads(line)
            parts = [s for s in re.split(r"(?<=[.!?])\s+", row["text"].strip()) if s]
            if not parts:
                continue
            titles.append(row["title"])
            first.append(len(sentences))
            sentences.extend(parts)
    return titles, sentences, first


def write_corpus(path: Path, n: int, seed: int, data: Path, keep: set[int]) -> dict[int, dict[str, str]]:
    """Stream ``n`` passages to ``path``; returns the passages whose numbers are in ``keep`` (query sources)."""
    titles, sentences, first = load_source(data)
    rng = random.Random(seed)
    kept = {}
    with open(path, "w", encoding="utf-8") as fh:
        for i in range(n):
            a = rng.randrange(len(titles))
            title = titles[a]
            if rng.random() < 0.3:
                title = f"{title} ({rng.choice(QUALIFIERS)})"
            target = rng.randint(80, 120)
            words = sentences[first[a]].split()
            while len(words) < target:
                words += sentences[rng.randrange(len(sentences))].split()
            row = {"id": f"bench-{i:06d}", "title": title, "text": " ".join(words[:target])}
            fh.write(json.dumps(row) + "\n")
            if i in keep:
                kept[i] = row
    return kept


def make_queries(sources: dict[int, dict[str, str]], n: int, seed: int) -> list[tuple[str, str, str | None]]:
    """``(kind, query, snippet or None)``: 30% titles, 30% passage snippets, 40% LLM-style questions.

    Sentences recur across synthetic passages, so a snippet's check is that some hit contains it, not that its
    source passage is the hit.
    """
    rng = random.Random(seed + 1)
    numbers = sorted(sources)
    queries = []
    for j in range(n):
        row = sources[numbers[j % len(numbers)]]
        words = row["text"].split()
        kind = "title" if j % 10 < 3 else "snippet" if j % 10 < 6 else "llm"
        if kind == "title":
            queries.append((kind, row["title"], None))
        elif kind == "snippet":
            length = rng.randint(6, 10)
            start = rng.randrange(len(words) - length)
            snippet = " ".join(words[start : start + length])
            queries.append((kind, snippet, snippet))
        else:
            w1, w2, w3 = (w.strip(".,;:()\"'") or "the" for w in rng.sample(words, 3))
            queries.append((kind, rng.choice(LLM_TEMPLATES).format(title=row["title"], w1=w1, w2=w2, w3=w3), None))
    return queries


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--passages", type=int, default=200_000)
    parser.add_argument("--builds", type=int, default=3, help="builds to time; the median is reported")
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--warmup", type=int, default=100, help="untimed queries before the timed ones")
    parser.add_argument("--k", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=None, help="writer threads (default: BM25Index.build's)")
    parser.add_argument("--memory-budget-mb", type=int, default=512)
    parser.add_argument("--data", default=str(DATA))
    parser.add_argument("--workdir", default=None, help="where the corpus and index go (default: system temp)")
    parser.add_argument(
        "--compare-exhaustive", action="store_true", help="also time scoring every matching passage (no pruning)"
    )
    args = parser.parse_args()

    from seakr_integrations.retrieval import BM25Index

    with tempfile.TemporaryDirectory(prefix="seakr-bm25-bench-", dir=args.workdir) as work:
        corpus, out = Path(work) / "corpus.jsonl", Path(work) / "index"
        rng = random.Random(args.seed)
        keep = set(rng.sample(range(args.passages), min(args.passages, args.queries + args.warmup)))
        started = time.perf_counter()
        sources = write_corpus(corpus, args.passages, args.seed, Path(args.data), keep)
        gen_s = time.perf_counter() - started
        corpus_mb = corpus.stat().st_size / 1e6
        builds = []
        for _ in range(args.builds):
            started = time.perf_counter()
            index = BM25Index.build(
                corpus, out, progress=False, memory_budget_mb=args.memory_budget_mb, threads=args.threads
            )
            builds.append(time.perf_counter() - started)
            del index
        build_rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        index_mb = sum(f.stat().st_size for f in out.iterdir()) / 1e6
        started = time.perf_counter()
        index = BM25Index.open(out)
        open_s = time.perf_counter() - started
        segments = index._searcher.num_segments

        queries = make_queries(sources, args.warmup + args.queries, args.seed)
        for _, q, _ in queries[: args.warmup]:
            index.search(q, args.k)
        times: dict[str, list[float]] = {"title": [], "snippet": [], "llm": []}
        found = empty = 0
        for kind, q, expected in queries[args.warmup :]:
            started = time.perf_counter_ns()
            hits = index.search(q, args.k)
            times[kind].append((time.perf_counter_ns() - started) / 1e6)
            empty += not hits
            found += expected is not None and any(expected in p.text for p in hits)
        everything = [t for ts in times.values() for t in ts]
        exhaustive: list[float] = []
        same = 0
        if args.compare_exhaustive:
            # The same queries scored the slow way (every passage holding any query word), for the speed-up and as
            # a check that the pruned search returns the same passages.
            for _, q, _ in queries[args.warmup :]:
                started = time.perf_counter_ns()
                rare, common, _bound = index._clauses(q)
                hits = index._search_exhaustive(rare + common, args.k)
                exhaustive.append((time.perf_counter_ns() - started) / 1e6)
                expected_ids = [i for _, i in sorted((-score, doc.get_first("id")) for score, doc in hits)[: args.k]]
                same += [p.id for p in index.search(q, args.k)] == expected_ids

    result = {
        "passages": args.passages,
        "corpus_mb": round(corpus_mb, 1),
        "generate_s": round(gen_s, 2),
        "builds": len(builds),
        "build_s_median": round(statistics.median(builds), 2),
        "build_s_all": [round(b, 2) for b in builds],
        "build_peak_rss_mb": round(build_rss_mb),
        "index_mb": round(index_mb, 1),
        "segments": segments,
        "open_ms": round(open_s * 1e3, 2),
        "queries": len(everything),
        "k": args.k,
        "query_ms_median": round(statistics.median(everything), 3),
        "query_ms_p95": round(percentile(everything, 0.95), 3),
        "query_ms_max": round(max(everything), 3),
        "query_ms_median_by_kind": {kind: round(statistics.median(ts), 3) for kind, ts in times.items() if ts},
        "snippet_in_top_k": f"{found}/{len(times['snippet'])}",
        "empty_results": empty,
        **(
            {
                "exhaustive_query_ms_median": round(statistics.median(exhaustive), 3),
                "exhaustive_query_ms_p95": round(percentile(exhaustive, 0.95), 3),
                "same_top_k_as_exhaustive": f"{same}/{len(exhaustive)}",
            }
            if exhaustive
            else {}
        ),
        "tantivy": version("tantivy"),
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}",
    }
    print(json.dumps(result), flush=True)
    print(
        f"| {args.passages:,} | {result['build_s_median']} s ({len(builds)} builds: "
        f"{', '.join(map(str, result['build_s_all']))}) | {result['query_ms_median']} ms | {result['query_ms_p95']} ms "
        f"| {result['index_mb']} MB, {segments} segments | {result['snippet_in_top_k']} |"
    )


if __name__ == "__main__":
    sys.exit(main())
