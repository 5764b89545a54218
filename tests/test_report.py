"""The project's report (``python -m experiments.report``): tables, AUROC and PNG plots from results files; bad
input is named."""

import subprocess
import sys
from pathlib import Path

import pytest

from experiments.method_runs import load_runs
from experiments.report import write_report
from seakr_integrations.evaluation.results import ResultsFile
from seakr_integrations.evaluation.summary import bootstrap_interval

ROOT = Path(__file__).resolve().parents[1]


def _report(*args):
    """``python -m experiments.report ARGS`` from the repository's root, where the package ``experiments`` is."""
    return subprocess.run(
        [sys.executable, "-m", "experiments.report", *args], cwd=ROOT, capture_output=True, text=True, timeout=300
    )


def _run(tmp_path, method, f1s, dataset="hotpotqa_dev.jsonl", uncertainty=None, stem=None, lm_calls=4):
    path = tmp_path / "runs" / f"{stem or method}.jsonl"
    config = {
        "method": method,
        "dataset": dataset,
        "model": "qwen",
        "backend": "vllm",
        "seakr": {"k": 10},
        "retriever": {"bm25_corpus": "c.jsonl"},
    }
    with ResultsFile.open(path, config) as out:
        for i, f1 in enumerate(f1s):
            trace = {"uncertainty": {"eigenscore": uncertainty[i], "perplexity": 1.0}} if uncertainty else {}
            out.append(
                {
                    "id": f"q{i}",
                    "prediction": "p",
                    "em": float(f1 == 1.0),
                    "f1": f1,
                    "retrievals": 1,
                    "lm_calls": lm_calls,
                    "generated_tokens": 100,
                    "seconds": 2.0,
                    "trace": trace,
                }
            )
    return path


def test_report_tables_auroc_and_plots(tmp_path):
    _run(tmp_path, "seakr", [1.0, 0.5, 1.0, 0.0])
    _run(tmp_path, "seakr-no-rerank", [0.0, 0.5, 1.0, 0.0])
    _run(tmp_path, "closed-book", [1.0, 0.0, 1.0, 0.0], uncertainty=[0.1, 2.0, 0.2, None])
    profile = {
        "model": "qwen",
        "dataset": "cal.jsonl",
        "sweep": [
            {"delta": 0.0, "f1": 0.3, "retrievals_per_question": 2.0},
            {"delta": 1.0, "f1": 0.4, "retrievals_per_question": 1.0, "chosen": True},
        ],
    }
    runs = load_runs([tmp_path / "runs"])
    report = write_report(runs, tmp_path / "docs" / "results.md", profiles=[profile], commands="seakr eval ...")
    text = report.read_text()
    assert "## hotpotqa_dev" in text and "seakr eval ..." in text
    rows = [line for line in text.splitlines() if line.startswith("| seakr")]
    assert rows[0].startswith("| seakr | 4 | 50.0 | 62.5 |")
    assert rows[1].startswith("| seakr-no-rerank | 4 | 25.0 | 37.5")
    assert "| eigenscore | 1.000 | 4 (2 wrong) |" in text  # wrong answers (q1, q3: 2.0 and an empty one) rank highest
    assert "| perplexity | 0.500 | 4 (2 wrong) |" in text  # a constant score: chance
    assert "| 1.0000 (chosen) |  | 1.00 |  | 40.0 |" in text  # the sweep as a table (this profile has no rate or EM)
    for name in ("results_f1.png", "results_uncertainty_hist.png", "results_delta_sweep.png"):
        assert (tmp_path / "docs" / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert f"]({name})" in text


def test_one_method_run_twice_is_told_apart_by_its_file_name(tmp_path):
    _run(tmp_path, "seakr", [1.0, 0.0])
    _run(tmp_path, "seakr", [1.0, 1.0], stem="seakr-f1-delta")  # another delta, written with --out
    text = write_report(load_runs([tmp_path / "runs"]), tmp_path / "r.md").read_text()
    rows = [line for line in text.splitlines() if line.startswith("| seakr")]
    assert rows[0].startswith("| seakr (seakr-f1-delta) | 2 | 100.0 |") and rows[1].startswith("| seakr | 2 | 50.0 |")


def test_report_compares_seakr_with_each_method_question_by_question(tmp_path):
    _run(tmp_path, "seakr", [1.0, 1.0, 0.5, 0.0, 1.0])
    _run(tmp_path, "cot", [0.0, 0.0, 0.5, 0.0, 0.0])  # SeaKR higher on 3, equal on 2: +60
    _run(tmp_path, "ircot", [1.0, 0.0, 1.0, 1.0, 1.0])  # higher on 1, lower on 2, equal on 2: -10
    text = write_report(load_runs([tmp_path / "runs"]), tmp_path / "r.md").read_text()
    cot = next(line for line in text.splitlines() if line.startswith("| cot | 5 | +60.0 | "))
    lo, hi = (float(x) for x in cot.split(" | ")[3].split(" to "))
    assert 0 < lo <= 60 <= hi <= 100 and cot.endswith("| 3 | 0 | 2 |")  # never lower: the interval stays above 0
    ircot = next(line for line in text.splitlines() if line.startswith("| ircot | 5 | -10.0 | "))
    lo, hi = (float(x) for x in ircot.split(" | ")[3].split(" to "))
    assert lo < 0 < hi and ircot.endswith("| 1 | 2 | 2 |")
    assert "| seakr | 5 | +0.0" not in text  # not against itself
    _run(tmp_path / "alone", "cot", [0.0, 1.0])
    assert "F1 difference" not in write_report(load_runs([tmp_path / "alone" / "runs"]), tmp_path / "a.md").read_text()


def test_bootstrap_interval_is_seeded_and_brackets_the_mean():
    values = [0.0, 1.0] * 20
    low, high = bootstrap_interval(values)
    assert (low, high) == bootstrap_interval(values) and low < 0.5 < high


def test_report_bad_input(tmp_path):
    with pytest.raises(ValueError, match="no results files"):
        load_runs([tmp_path])
    path = tmp_path / "empty.jsonl"
    ResultsFile.open(path, {"method": "seakr"}).close()
    with pytest.raises(ValueError, match="holds no results yet"):
        load_runs([path])
    done = _report(str(tmp_path / "missing.jsonl"), "--out", str(tmp_path / "r.md"))
    assert done.returncode == 2 and "missing.jsonl" in done.stderr and "Traceback" not in done.stderr


def test_report_command(tmp_path):
    _run(tmp_path, "seakr", [1.0, 0.0])
    bad = tmp_path / "profile.json"
    bad.write_text("{")
    done = _report(str(tmp_path / "runs"), "--out", str(tmp_path / "r.md"), "--profiles", str(bad))
    assert done.returncode == 2 and "not a calibration profile" in done.stderr
    done = _report(str(tmp_path / "runs"), "--out", str(tmp_path / "r.md"))
    assert done.returncode == 0, done.stderr
    assert "wrote" in done.stdout and (tmp_path / "r_f1.png").exists()


def test_auroc_is_not_available_when_every_answer_is_wrong_and_the_report_says_so(tmp_path):
    _run(tmp_path, "closed-book", [0.0, 0.5], uncertainty=[0.1, 2.0])
    text = write_report(load_runs([tmp_path / "runs"]), tmp_path / "r.md").read_text()
    assert "| eigenscore | n/a (all 2 wrong) | 2 (2 wrong) |" in text


def test_methods_are_compared_on_shared_questions_and_auroc_uses_every_closed_book_answer(tmp_path):
    """Closed-book extended to more questions (for AUROC) must not change the F1 table's footing."""
    _run(tmp_path, "seakr", [1.0, 0.0])
    _run(tmp_path, "closed-book", [0.0, 0.0, 1.0, 0.0], uncertainty=[2.0, 3.0, 0.1, 1.0])
    text = write_report(load_runs([tmp_path / "runs"]), tmp_path / "docs" / "results.md").read_text()
    assert "Methods compared on the 2 questions every results file holds; closed-book (4) answered more" in text
    assert "| closed-book | 2 | 0.0 | 0.0 |" in text and "| seakr | 2 | 50.0 | 50.0 |" in text
    assert "| eigenscore | 1.000 | 4 (3 wrong) |" in text  # over all four closed-book answers


def test_runs_with_no_shared_question_are_shown_whole_and_the_report_says_so(tmp_path):
    _run(tmp_path, "seakr", [1.0])
    path = _run(tmp_path, "cot", [0.0, 0.5])
    lines = path.read_text().splitlines()
    path.write_text("\n".join([lines[0], lines[2].replace('"q1"', '"q9"')]) + "\n")  # cot answered only q9
    text = write_report(load_runs([tmp_path / "runs"]), tmp_path / "docs" / "results.md").read_text()
    assert "share no question" in text and "| seakr | 1 | 100.0 |" in text and "| cot | 1 | 0.0 | 50.0 |" in text


def test_traces_are_read_through_the_typed_loader_and_an_old_or_newer_version_is_refused(tmp_path):
    from test_decision_records import _v1
    from test_trace_tables import _result

    trace = _result().to_dict()
    path = tmp_path / "seakr.jsonl"
    with ResultsFile.open(path, {"method": "seakr", "dataset": "hotpotqa_dev.jsonl"}) as out:
        for i, written in enumerate((trace, {"generation": "Paris"})):
            out.append(
                {"id": f"q{i}", "prediction": "France", "em": 1.0, "f1": 1.0, "golds": ["France"], "trace": written}
            )
    (run,) = load_runs([path])
    new, other = (r["trace"] for r in run.records)
    assert new == trace and other == {"generation": "Paris"}  # this release's form, as written; not a SeaKR trace
    for name, written, said in (
        ("older", _v1(trace), r"older.jsonl, question 'q9': line 2: .*schema_version 1.*seakr eval"),
        ("newer", {**trace, "schema_version": 9}, r"newer.jsonl, question 'q9': .*schema_version 9.*upgrade"),
    ):
        with ResultsFile.open(tmp_path / f"{name}.jsonl", {"method": "seakr"}) as out:
            out.append({"id": "q9", "prediction": "x", "em": 0.0, "f1": 0.0, "trace": written})
        with pytest.raises(ValueError, match=said):
            load_runs([tmp_path / f"{name}.jsonl"])


def test_a_seakr_run_renamed_for_the_rules_it_ran_is_the_one_compared(tmp_path):
    _run(tmp_path, "seakr", [1.0, 1.0, 0.5, 0.0, 1.0], stem="seakr-paper")  # method seakr, its file named for its rules
    _run(tmp_path, "cot", [0.0, 0.0, 0.5, 0.0, 0.0])
    text = write_report(load_runs([tmp_path / "runs"]), tmp_path / "r.md").read_text()
    assert "| seakr (seakr-paper) | 5 | 60.0 | 70.0 |" in text and "| cot | 5 | +60.0 | " in text
    _run(tmp_path, "seakr", [0.0, 0.0, 0.0, 0.0, 0.0], stem="seakr-other")  # two files of method seakr: which one?
    assert "F1 difference" not in write_report(load_runs([tmp_path / "runs"]), tmp_path / "r.md").read_text()
