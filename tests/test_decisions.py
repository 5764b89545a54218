"""The decision analysis of the report: gate, re-ranking and final choice counted from traces, checked by hand."""

import pytest
from test_report import _run

from experiments.decisions import (
    decision_summary,
    describe_trace,
    gate_agreement,
    retrieval_benefit,
)
from experiments.method_runs import load_runs
from experiments.report import write_report
from seakr_integrations.evaluation.results import ResultsFile


def _number(u):
    """A trace's number as it is written: one that could not be computed (``None`` here) is ``"inf"``."""
    return "inf" if u is None else u


def _candidate(rank, title, u, chosen, generation="A step."):
    return {
        "id": title.lower(),
        "search_rank": rank,
        "title": title,
        "uncertainty": {"value": _number(u), "estimator": "eigenscore", "num_samples": 4},
        "rank_value": _number(u if generation else None),
        "chosen": chosen,
        "generation": generation,
    }


def _step(index, decision, u, candidates=(), text=None):
    return {
        "index": index,
        "decision": decision,
        "uncertainty": {"value": _number(u), "estimator": "eigenscore", "num_samples": 4},
        "pseudo_generation": f"Step {index}." if text is None else text,
        "query": f"query {index}",
        "candidates": list(candidates),
    }


def _record(qid, steps, finals, strategy, golds, f1, titles=()):
    trace = {
        "schema_version": 2,
        "question": f"Q {qid}?",
        "answer": finals[strategy][0],
        "passages": [],
        "stop_reason": "answer found",
        "steps": steps,
        "finals": {
            s: {"answer": a, "uncertainty": {"value": _number(u), "estimator": "eigenscore", "num_samples": 4}}
            for s, (a, u) in finals.items()
        },
        "strategy": strategy,
        "config": {"delta": -1.0},
    }
    return {
        "id": qid,
        "question": f"Q {qid}?",
        "golds": golds,
        "prediction": finals[strategy][0],
        "em": float(f1 == 1),
        "f1": f1,
        "supporting_titles": list(titles),
        "trace": trace,
    }


# q0: retrieves at step 1 and keeps the rank-2 passage, which is the supporting one; then answers from rationales,
#     although the knowledge answer was the right one.
# q1: answers without retrieval; knowledge-based answer chosen and right.
RECORDS = [
    _record(
        "q0",
        [
            _step(0, "retrieve", 0.5, [_candidate(1, "Wrong", 0.2, False), _candidate(2, "Gold", -2.0, True)]),
            _step(1, "answer", -3.0),
        ],
        {"rationales": ("Paris", -1.0), "knowledge": ("Lyon", -0.5)},
        "rationales",
        ["Lyon"],
        0.0,
        titles=["Gold"],
    ),
    _record(
        "q1",
        [_step(0, "answer", -4.0)],
        {"rationales": ("x", 1.0), "knowledge": ("Rome", -2.0)},
        "knowledge",
        ["Rome"],
        1.0,
    ),
]


def test_counts_match_the_traces():
    s = decision_summary(RECORDS)
    assert (s.questions, s.steps, s.retrieve_steps, s.first_step_retrievals) == (2, 3, 1, 1)
    assert (s.rerank_rounds, s.picked_below_first) == (1, 1)
    assert (s.titled_rounds, s.chosen_supporting, s.first_supporting) == (1, 1, 0)
    assert s.strategies == {"rationales": 1, "knowledge": 1}
    assert s.chosen_f1 == 0.5 and s.other_f1 == 0.5 and s.best_f1 == 1.0 and s.two_finals == 2
    assert s.final_f1 == {"knowledge": 1.0, "rationales": 0.0}  # the two final-answer ablations, from the trace
    assert decision_summary([{"id": "b", "f1": 0.0, "trace": {"uncertainty": {}}}]) is None  # closed-book records


def test_empty_rounds_and_blind_re_ranking_are_counted():
    """The model wrote nothing at step 2 (U = inf) and after every candidate: the search order decided."""
    blind = [_candidate(1, "A", None, True, generation=""), _candidate(2, "B", 0.5, False, generation="")]
    record = _record(
        "q2",
        [_step(0, "accept", -2.0), _step(1, "retrieve", None, blind, text=""), _step(2, "answer", -3.0)],
        {"rationales": ("x", -1.0), "knowledge": ("y", -2.0)},
        "knowledge",
        ["y"],
        1.0,
    )
    s = decision_summary([*RECORDS, record])
    assert (s.steps, s.empty_steps, s.rerank_rounds, s.blind_rounds, s.picked_below_first) == (6, 1, 2, 1, 1)
    line = describe_trace(record)[1]
    assert "U = inf vs delta -1.00 -> retrieve" in line
    assert "#1 'A' U=inf (wrote nothing: ranks last) **kept**, #2 'B' U=0.50 (wrote nothing: ranks last)" in line


def test_gate_against_closed_book_knowledge():
    closed = [{"id": "q0", "em": 1.0}, {"id": "q1", "em": 0.0}, {"id": "other", "em": 1.0}]
    assert gate_agreement(RECORDS, closed) == {
        "known_skipped": 0,
        "known_retrieved": 1,
        "unknown_skipped": 1,
        "unknown_retrieved": 0,
    }
    assert gate_agreement(RECORDS, [{"id": "zzz", "em": 1.0}]) is None


def _scored(f1s):
    return [{"id": f"q{i}", "f1": f1} for i, f1 in enumerate(f1s)]


def test_retrieval_benefit_checks_the_gate_against_where_retrieval_helped():
    """q0 retrieved (U 0.5), q1 did not (U -4.0), q2 did not and wrote nothing (U inf); q3 is not in SeaKR's run."""
    empty = _record(
        "q2", [_step(0, "accept", None, text=""), _step(1, "answer", -1.0)], {"r": ("y", 0.0)}, "r", ["y"], 0.5
    )
    seakr = [*RECORDS, empty]
    single = _scored([1.0, 0.5, 1.0, 1.0])  # above CoT on q0 and q2: helped there
    cot = _scored([0.0, 1.0, 0.0, 0.0])
    b = retrieval_benefit(seakr, single, cot)
    assert (b.questions, b.helped, b.retrieved, b.helped_retrieved) == (3, 2, 1, 1)
    assert (b.on_retrieved.questions, b.on_retrieved.seakr, b.on_retrieved.single_retrieval, b.on_retrieved.cot) == (
        1,
        0.0,
        1.0,
        0.0,
    )
    assert (b.on_skipped.questions, b.on_skipped.seakr, b.on_skipped.single_retrieval, b.on_skipped.cot) == (
        2,
        0.75,
        0.75,
        0.5,
    )
    # helped: 0.5 and inf, other: -4.0; both helped ones rank above it
    assert (b.median_helped, b.median_other, b.auroc) == (float("inf"), -4.0, 1.0)
    assert retrieval_benefit(seakr, _scored([0.0] * 3), cot).auroc is None  # nothing helped: no AUROC
    assert retrieval_benefit(seakr, [{"id": "zzz", "f1": 1.0}], cot) is None


def test_describe_trace_names_each_decision():
    lines = describe_trace(RECORDS[0])
    assert lines[0].startswith("step 1: U = 0.50 vs delta -1.00 -> retrieve")
    assert "#2 'Gold' (supporting) U=-2.00 **kept**" in lines[0] and "#1 'Wrong' U=0.20," in lines[0]
    assert lines[-1] == 'final: rationales "Paris" U=-1.00, knowledge "Lyon" U=-0.50 -> rationales'


def test_report_shows_decisions_gate_and_lost_examples(tmp_path):
    config = {"method": "seakr", "dataset": "hotpotqa_dev.jsonl", "seakr": {"k": 10}, "retriever": {}}
    with ResultsFile.open(tmp_path / "runs" / "seakr.jsonl", config) as out:
        for r in RECORDS:
            out.append({**r, "retrievals": 1, "lm_calls": 4, "generated_tokens": 100, "seconds": 2.0})
    _run(tmp_path, "closed-book", [1.0, 0.0], uncertainty=[0.1, 2.0])  # q0 known, q1 unknown
    _run(tmp_path, "cot", [1.0, 1.0])  # beats SeaKR on q0
    report = write_report(load_runs([tmp_path / "runs"]), tmp_path / "r.md", notes="## Analysis\n\nBecause.")
    text = report.read_text()
    assert text.index("## Analysis") < text.index("## hotpotqa_dev")
    assert (
        "| seakr | 1/2 (50%) | 1/3 (33%) | 0/3 (0%) | 1/1 (100%) | 0/1 (0%) | 1/1 (100%) | 0/1 (0%) | "
        "knowledge 1, rationales 1 | "
        "50.0 / 50.0 / 100.0 (2 q) | knowledge 100.0, rationales 0.0 |" in text
    )
    assert "of 1 known questions it skipped retrieval for 0; of 1 unknown ones it retrieved for 0" in text
    assert "Did SeaKR retrieve where retrieval helps?" not in text  # needs a single-retrieval run
    lost = text[text.index("SeaKR lost by the widest F1 margin") :]
    assert "**Q q0?** gold ['Lyon']; SeaKR \"Paris\" (F1 0.00), " in lost and '"p" (F1 1.00)' in lost
    assert "Q q1?" not in lost and "  * step 1: U = 0.50" in lost


@pytest.mark.parametrize("examples", [0])
def test_no_examples_when_asked_for_none(tmp_path, examples):
    config = {"method": "seakr", "dataset": "d.jsonl", "seakr": {"k": 10}, "retriever": {}}
    with ResultsFile.open(tmp_path / "runs" / "seakr.jsonl", config) as out:
        for r in RECORDS:
            out.append({**r, "retrievals": 1, "lm_calls": 4, "generated_tokens": 100, "seconds": 2.0})
    _run(tmp_path, "cot", [1.0, 1.0], dataset="d.jsonl")
    text = write_report(load_runs([tmp_path / "runs"]), tmp_path / "r.md", examples=examples).read_text()
    assert "widest F1 margin" not in text and "| seakr | 1/2 (50%)" in text


def test_report_checks_the_gate_against_single_retrieval_and_cot(tmp_path):
    config = {"method": "seakr", "dataset": "hotpotqa_dev.jsonl", "seakr": {"k": 10}, "retriever": {}}
    with ResultsFile.open(tmp_path / "runs" / "seakr.jsonl", config) as out:
        for r in RECORDS:
            out.append({**r, "retrievals": 1, "lm_calls": 4, "generated_tokens": 100, "seconds": 2.0})
    _run(tmp_path, "cot", [0.0, 0.0])
    _run(tmp_path, "single-retrieval", [1.0, 0.5])  # helped on both; SeaKR retrieved on q0 only
    text = write_report(load_runs([tmp_path / "runs"]), tmp_path / "r.md").read_text()
    assert "single retrieval scored above CoT (same prompts, one retrieved passage apart) on 2 of 2 questions; " in text
    assert "SeaKR retrieved on 1 questions, 1 of them helped ones." in text
    assert "| retrieved | 1 | 0.0 | 100.0 | 0.0 |" in text and "| never retrieved | 1 | 100.0 | 50.0 | 0.0 |" in text
    assert "First-step uncertainty" not in text  # every question helped: no AUROC line
