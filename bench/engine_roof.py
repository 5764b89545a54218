"""The engine's roof for SeaKR's request shape, and SeaKR under it (vLLM, in-process).

One vLLM engine, started by ``VLLMBackend`` exactly as SeaKR starts it (``vllm_settings``: dtype, eager execution,
prefix caching, the CPU block size, whole prefills, the KV cache sized by ``kv_cache_bytes``, the environment of
``engine_environment``), then two measurements on that engine in this process:

1. The roof: ``backend.llm.generate`` called directly (vLLM's own offline API, plain ``SamplingParams``, no SeaKR
   code on the request path).  For each question, the prompt of SeaKR's first call (the HotpotQA exemplars, the
   question, chat template; the same prefix for all, so prefix caching applies) as one greedy request and one
   ``n=k`` request (SeaKR's sampling: temperature 1.0, top-k 50, top-p 0.9, seeded), both of up to ``M`` tokens
   with EOS honoured.  Batch sizes 1, 2, 4 ... (questions submitted in one ``generate`` call); one warm-up call of the
   largest batch first, then the median of ``--repeats`` runs per size.  Generated tokens are the outputs' actual
   token counts; the roof is the best tokens/s.  ``--params seakr`` sends SeaKR's own request parameters instead
   (``VLLMBackend.request_params``: log-probabilities, seakr's top-k/top-p logits processor instead of vLLM's);
   ``--seakr-params-batch B`` runs batch ``B`` once that way after the plain roof.
2. ``SeaKR.answer_many`` on the same questions (BM25 index of ``data/corpus_hotpotqa.jsonl``,
   ``SeaKRConfig(k, max_tokens, exemplar_style="hotpotqa")``): generated tokens from the results
   (``SeaKRResult.generated_tokens``: greedy continuations and samples, read-outs not counted) over wall seconds, and
   its ratio to the roof; with the LM calls, searches and their summed seconds, the backend's prefill counters
   (prompt tokens sent and found cached, per request kind) and the CPU seconds of this process and of the engine's
   processes while it ran (``cpu_s``).  ``--one-at-a-time`` adds ``SeaKR.answer`` per question.
   Last, a prefill probe (``--prefill-probe N``): N later questions' prompts with three passages each, not seen
   before, one token each: prompt tokens the engine computes per second.
3. ``--replay``: the roof for SeaKR's own mix of requests.  Every request ``answer_many`` sent to the engine is
   recorded (prompt tokens and request parameters: greedy calls, samples, read-outs); then, with the prefix cache
   reset (as before ``answer_many``, which starts from a reset cache too) and capture off, the engine runs the same
   requests with no SeaKR code and no waiting between them: all greedy and sample requests in one ``generate``, then
   all read-outs in a second (so they find their samples' blocks cached, as in SeaKR).  Its seconds against
   ``answer_many``'s are how close SeaKR's chain of dependent calls runs to what the engine does with the same work.

    python bench/engine_roof.py --model qwen --k 10 --max-tokens 64 --batch-sizes 1 2 4 8 16 --questions 16

One JSON line per measurement on stdout; all of them in ``--out`` (default ``bench/results/engine_roof.json``,
ignored by git).  Results go to docs/benchmarks.md with the command and the machine.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "data"


class TimedRetriever:
    """A retriever that adds up the seconds its searches take (they may overlap generation)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.seconds = 0.0
        self.calls = 0

    def search(self, query: str, k: int = 3) -> list[Any]:
        started = time.perf_counter()
        try:
            return self.inner.search(query, k)
        finally:
            self.seconds += time.perf_counter() - started
            self.calls += 1


def emit(record: dict[str, Any], summary: dict[str, Any], out: Path) -> None:
    """Print one measurement and rewrite ``out`` with all of them so far."""
    summary["measurements"].append(record)
    print(json.dumps(record), flush=True)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(summary, indent=1) + "\n")


def output_tokens(outputs: list[Any]) -> int:
    return sum(len(c.token_ids) for request in outputs for c in request.outputs)


def timed_generate(llm: Any, prompts: list[Any], params: list[Any]) -> tuple[float, int]:
    started = time.perf_counter()
    outputs = llm.generate(prompts, params, use_tqdm=False)
    return time.perf_counter() - started, output_tokens(outputs)


def roof_requests(ids: list[list[int]], greedy: Any, sampled: Any) -> tuple[list[Any], list[Any]]:
    """Per question, one greedy request and one ``n=k`` request on the same prompt."""
    from vllm.inputs import TokensPrompt

    prompts = [TokensPrompt(prompt_token_ids=p) for p in ids for _ in (greedy, sampled)]
    return prompts, [greedy, sampled] * len(ids)


def prefill_probe(llm: Any, builder: Any, retriever: Any, questions: list[str]) -> dict[str, Any]:
    """Prefill speed: prompts not seen before (a question, three of its passages), one token each."""
    from vllm import SamplingParams

    prompts = [builder(q, (), [p.text for p in retriever.search(q, 3)]) for q in questions]
    started = time.perf_counter()
    outputs = llm.generate(prompts, SamplingParams(temperature=0.0, max_tokens=1), use_tqdm=False)
    seconds = time.perf_counter() - started
    tokens = sum(len(o.prompt_token_ids) for o in outputs)
    uncached = tokens - sum(o.num_cached_tokens or 0 for o in outputs)
    record = {"kind": "prefill", "requests": len(prompts), "prompt_tokens": tokens, "uncached_tokens": uncached}
    return {**record, "seconds": round(seconds, 2), "uncached_tokens_per_s": round(uncached / seconds, 1)}


def prefill_delta(before: dict[str, dict[str, int]], after: dict[str, dict[str, int]]) -> dict[str, dict[str, int]]:
    zero = {"prompt_tokens": 0, "cached_tokens": 0}
    return {kind: {n: v - before.get(kind, zero)[n] for n, v in counts.items()} for kind, counts in after.items()}


class RequestLog:
    """Records every request a ``VLLMStream`` adds to the engine: (kind, prompt token ids, request parameters)."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, list[int], Any]] = []

    def __enter__(self) -> RequestLog:
        from seakr_integrations.backends.vllm_stream import VLLMStream

        self.original = VLLMStream._add
        log = self.requests

        def add(stream: Any, request_id: str, ids: list[int], params: Any, role: tuple[str, Any]) -> None:
            log.append((role[0], list(ids), params))
            self.original(stream, request_id, ids, params, role)

        VLLMStream._add = add  # type: ignore[method-assign]
        return self

    def __exit__(self, *exc: Any) -> None:
        from seakr_integrations.backends.vllm_stream import VLLMStream

        VLLMStream._add = self.original  # type: ignore[method-assign]


def replay(backend: Any, requests: list[tuple[str, list[int], Any]], seakr_seconds: float) -> dict[str, Any]:
    """SeaKR's recorded requests on the engine alone: greedy and samples at once, then the read-outs."""
    from vllm.inputs import TokensPrompt

    backend._rpc("seakr_set_capture", False)
    backend.llm.reset_prefix_cache()
    record: dict[str, Any] = {"kind": "replay", "requests": len(requests)}
    total, tokens, computed = 0.0, 0, 0
    for wave, kinds in (("calls", ("greedy", "samples")), ("readouts", ("readout",))):
        chosen = [(ids, params) for kind, ids, params in requests if kind in kinds]
        started = time.perf_counter()
        outputs = backend.llm.generate(
            [TokensPrompt(prompt_token_ids=ids) for ids, _ in chosen], [p for _, p in chosen], use_tqdm=False
        )
        seconds = time.perf_counter() - started
        uncached = sum(len(o.prompt_token_ids) - (o.num_cached_tokens or 0) for o in outputs)
        record[wave] = {"requests": len(chosen), "seconds": round(seconds, 2), "uncached_prompt_tokens": uncached}
        total, computed = total + seconds, computed + uncached
        if wave == "calls":
            tokens = output_tokens(outputs)
    record.update(seconds=round(total, 2), tokens=tokens, uncached_prompt_tokens=computed)
    record.update(tokens_per_s=round(tokens / total, 2), seakr_seconds=round(seakr_seconds, 2))
    return {**record, "seakr_over_replay": round(seakr_seconds / total, 2)}


def cpu_seconds() -> dict[str, float]:
    """CPU seconds (user + system) so far of this process (SeaKR's loop, the driver, searches, estimators, and vLLM's
    front end: requests in, outputs detokenised) and of its child processes (vLLM's engine core and worker)."""
    import psutil

    me = psutil.Process()
    caller = sum(me.cpu_times()[:2])
    engine = 0.0
    for child in me.children(recursive=True):
        try:
            engine += sum(child.cpu_times()[:2])
        except psutil.NoSuchProcess:
            pass
    return {"caller": caller, "engine": engine}


def seakr_run(
    seakr: Any, retriever: TimedRetriever, questions: list[str], kind: str, roof: float, in_flight: int = 0
) -> dict[str, Any]:
    """``answer_many`` on all questions at once, or ``answer`` one question after another."""
    backend = seakr.backend
    before = backend.prefill.to_dict()
    retriever.seconds, retriever.calls = 0.0, 0
    cpu_before = cpu_seconds()
    started = time.perf_counter()
    if kind == "seakr_answer_many":
        results = seakr.answer_many(questions, max_in_flight=in_flight or len(questions))
    else:
        results = [seakr.answer(q) for q in questions]
    seconds = time.perf_counter() - started
    cpu = {name: round(value - cpu_before[name], 1) for name, value in cpu_seconds().items()}
    tokens = sum(r.generated_tokens for r in results)
    return {
        "kind": kind,
        "questions": len(questions),
        "in_flight": in_flight or len(questions),
        "tokens": tokens,
        "seconds": round(seconds, 2),
        "tokens_per_s": round(tokens / seconds, 2),
        "ratio_to_roof": round(tokens / seconds / roof, 3),
        "lm_calls": sum(r.lm_calls for r in results),
        "searches": retriever.calls,
        "search_s": round(retriever.seconds, 2),
        "prefill": prefill_delta(before, backend.prefill.to_dict()),
        "cpu_s": cpu,
        "answers": [r.answer for r in results],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default="qwen", help="a bundled model's name (seakr_integrations.models)")
    parser.add_argument("--dtype", default="float32")
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--max-tokens", type=int, default=64)
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=[1, 2, 4, 8, 16])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--questions", type=int, default=16, help="SeaKR's questions (the first of hotpotqa_dev)")
    parser.add_argument("--params", choices=["vllm", "seakr"], default="vllm", help="the roof's request parameters")
    parser.add_argument("--seakr-params-batch", type=int, default=0, help="also run this batch with SeaKR's params")
    parser.add_argument("--prefill-probe", type=int, default=16, help="prompts of the prefill probe (0: none)")
    parser.add_argument("--no-seakr", action="store_true", help="measure the roof only")
    parser.add_argument("--one-at-a-time", action="store_true", help="also SeaKR.answer, one question at a time")
    parser.add_argument("--replay", action="store_true", help="also the engine alone on answer_many's requests")
    parser.add_argument("--in-flight", type=int, default=0, help="answer_many's max_in_flight (default: all)")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "engine_roof.json")
    args = parser.parse_args()
    os.environ.setdefault("VLLM_LOGGING_LEVEL", "WARNING")
    os.environ.setdefault("VLLM_LOGGING_STREAM", "ext://sys.stderr")  # stdout carries the JSON lines only

    from vllm import SamplingParams

    from seakr_integrations.backends.vllm import VLLMBackend
    from seakr_integrations.reasoning import SeaKR, SeaKRConfig
    from seakr_integrations.retrieval.bm25 import BM25Index

    count = max([*args.batch_sizes, args.questions])
    questions = [json.loads(line)["question"] for line in (DATA / "hotpotqa_dev.jsonl").open()]
    summary: dict[str, Any] = {
        "model": args.model,
        "dtype": args.dtype,
        "k": args.k,
        "max_tokens": args.max_tokens,
        "params": args.params,
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {sys.version.split()[0]}",
        "measurements": [],
    }
    with tempfile.TemporaryDirectory() as tmp:
        retriever = TimedRetriever(BM25Index.build(DATA / "corpus_hotpotqa.jsonl", Path(tmp) / "index", progress=False))
        started = time.perf_counter()
        backend = VLLMBackend(args.model, dtype=args.dtype)
        summary["engine_start_s"] = round(time.perf_counter() - started, 1)
        summary["engine"] = {
            name: getattr(backend.llm.llm_engine.vllm_config.scheduler_config, name, None)
            for name in ("max_num_seqs", "max_num_batched_tokens")
        }
        config = SeaKRConfig(k=args.k, max_tokens=args.max_tokens, exemplar_style="hotpotqa")
        seakr = SeaKR(backend, retriever, config)
        ids = [backend.tokenize(seakr.calls.builder(q)) for q in questions[:count]]  # the prompt of SeaKR's first call
        summary["prompt_tokens_median"] = statistics.median(len(p) for p in ids)
        sampling = config.sampling  # SeaKR's: temperature 1.0, top-k 50, top-p 0.9, seed 42
        greedy = SamplingParams(temperature=0.0, max_tokens=args.max_tokens)
        sampled = SamplingParams(
            n=args.k,
            temperature=sampling.temperature,
            top_k=sampling.top_k,
            top_p=sampling.top_p,
            seed=sampling.seed,
            max_tokens=args.max_tokens,
        )
        seakr_greedy, seakr_sampled, _ = backend.request_params(sampling)  # no stop strings
        if args.params == "seakr":
            greedy, sampled = seakr_greedy, seakr_sampled
        llm = backend.llm
        seconds, tokens = timed_generate(llm, *roof_requests(ids[: max(args.batch_sizes)], greedy, sampled))
        summary["warmup"] = {"batch": max(args.batch_sizes), "seconds": round(seconds, 2), "tokens": tokens}
        roof = 0.0
        for batch in args.batch_sizes:
            runs = [timed_generate(llm, *roof_requests(ids[:batch], greedy, sampled)) for _ in range(args.repeats)]
            seconds = statistics.median(s for s, _ in runs)
            tokens = round(statistics.median(t for _, t in runs))
            roof = max(roof, tokens / seconds)
            record = {"kind": "roof", "batch": batch, "sequences": batch * (args.k + 1), "tokens": tokens}
            record.update(seconds=round(seconds, 2), tokens_per_s=round(tokens / seconds, 2))
            emit({**record, "runs_s": [round(s, 2) for s, _ in runs]}, summary, args.out)
        summary["roof_tokens_per_s"] = round(roof, 2)
        if args.seakr_params_batch:
            batch = args.seakr_params_batch
            seconds, tokens = timed_generate(llm, *roof_requests(ids[:batch], seakr_greedy, seakr_sampled))
            record = {"kind": "roof_seakr_params", "batch": batch, "tokens": tokens, "seconds": round(seconds, 2)}
            emit({**record, "tokens_per_s": round(tokens / seconds, 2)}, summary, args.out)
        if not args.no_seakr:
            if args.replay:
                llm.reset_prefix_cache()
            asked = questions[: args.questions]
            with RequestLog() as log:
                run = seakr_run(seakr, retriever, asked, "seakr_answer_many", roof, args.in_flight)
            emit(run, summary, args.out)
            if args.replay:
                emit(replay(backend, log.requests, run["seconds"]), summary, args.out)
            if args.one_at_a_time:
                emit(seakr_run(seakr, retriever, questions[: args.questions], "seakr_answer", roof), summary, args.out)
        if args.prefill_probe:
            probe = questions[count : count + args.prefill_probe]
            emit(prefill_probe(llm, seakr.calls.builder, retriever, probe), summary, args.out)
        backend.close()
    args.out.write_text(json.dumps(summary, indent=1) + "\n")
    print(json.dumps({k: v for k, v in summary.items() if k != "measurements"}), flush=True)


if __name__ == "__main__":
    main()
