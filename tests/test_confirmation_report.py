"""The report's confirmation section: it goes first, and it states the target's outcome from the numbers."""

from test_report import _report, _run

from experiments.method_runs import load_runs
from experiments.report import write_report


def _confirm(tmp_path, text_of):
    if not (tmp_path / "old").exists():
        _run(tmp_path / "old", "seakr", [0.0, 0.5])  # the main report's runs (other questions)
    return write_report(
        load_runs([tmp_path / "old" / "runs"]),
        tmp_path / "docs" / "results.md",
        notes="## Read this first",
        confirmation=load_runs([tmp_path / "confirm" / "runs"]),
        confirmation_notes=text_of,
    ).read_text()


def test_the_section_goes_first_and_says_the_target_is_met(tmp_path):
    root = tmp_path / "confirm"
    _run(root, "seakr", [1.0, 1.0, 0.5, 0.0], lm_calls=6)
    _run(root, "seakr-paper", [1.0, 0.0, 0.5, 0.0], lm_calls=9)
    _run(root, "flare", [1.0, 0.0, 1.0, 0.0], lm_calls=8)
    _run(root, "cot", [0.0, 0.0, 0.0, 0.0], lm_calls=2)
    text = _confirm(tmp_path, "Decided before the run.")
    head, rest = text.split("## Read this first")
    assert "## Confirmation on questions never used for any choice\n\nDecided before the run." in head
    assert "the best baseline, flare, scores 50.0 (+12.5). This part of the target is **met**." in head
    assert "* F1: the default SeaKR scores 62.5;" in head
    assert "Baselines run: flare, cot." in head  # seakr-paper is SeaKR, not a baseline
    assert "the default SeaKR makes 6.0, SeaKR with the paper's rules 9.0. This part of the target is **met**." in head
    assert "| seakr | 4 | 50.0 | 62.5 |" in head and "| seakr-paper | 4 | 25.0 | +25.0 |" not in head
    assert "| seakr-paper | 4 | +25.0 |" in head and "| flare | 4 | +12.5 |" in head  # paired against the default
    assert "| seakr | 2 | 0.0 | 25.0 |" in rest  # the earlier tables follow, unchanged
    files = text.split("## Results files and their configurations")[1]
    assert str(root / "runs" / "flare.jsonl") in files and str(tmp_path / "old" / "runs" / "seakr.jsonl") in files


def test_a_missed_target_is_stated_with_its_numbers(tmp_path):
    root = tmp_path / "confirm"
    _run(root, "seakr", [1.0, 0.0], lm_calls=12)
    _run(root, "seakr-paper", [1.0, 0.0], lm_calls=10)
    _run(root, "single-retrieval", [1.0, 0.5], lm_calls=2)
    text = _confirm(tmp_path, "")
    assert "single-retrieval, scores 75.0 (-25.0). This part of the target is **missed**, by 25.0 F1." in text
    assert "makes 12.0, SeaKR with the paper's rules 10.0. This part of the target is **missed**, by 2.0." in text


def test_parts_not_run_are_named_not_checked(tmp_path):
    root = tmp_path / "confirm"
    _run(root, "seakr", [1.0, 0.0])
    text = _confirm(tmp_path, "")
    assert "no baseline has run on these questions, so this part of the target is not checked" in text
    assert "`seakr-paper` has not answered all these questions" in text
    _run(root, "cot", [0.0, 0.0], dataset="2wiki_dev.jsonl")
    text = _confirm(tmp_path, "")
    assert "### 2wiki_dev: confirmation\n\nNo `seakr` results here, so the target is not checked." in text


def test_report_command_takes_the_confirmation_and_its_notes(tmp_path):
    _run(tmp_path / "old", "seakr", [1.0, 0.0])
    _run(tmp_path / "confirm", "seakr", [1.0, 1.0])
    notes = tmp_path / "confirmation.md"
    notes.write_text("Rules decided first.")
    out = tmp_path / "r.md"
    done = _report(
        str(tmp_path / "old" / "runs"),
        "--out",
        str(out),
        "--confirmation",
        str(tmp_path / "confirm" / "runs"),
        "--confirmation-notes",
        str(notes),
    )
    assert done.returncode == 0, done.stderr
    text = out.read_text()
    assert text.index("Rules decided first.") < text.index("## hotpotqa_dev\n")
    empty = tmp_path / "empty"
    empty.mkdir()
    done = _report(str(tmp_path / "old" / "runs"), "--out", str(out), "--confirmation", str(empty))
    assert done.returncode == 2 and "no results files" in done.stderr and "Traceback" not in done.stderr


def test_a_run_still_short_of_the_questions_waits_outside_the_tables(tmp_path):
    root = tmp_path / "confirm"
    _run(root, "seakr", [1.0, 0.0, 1.0, 0.0])
    _run(root, "cot", [0.0, 0.0, 0.0, 0.0])
    _run(root, "seakr-paper", [1.0], lm_calls=9)  # resumed later
    text = _confirm(tmp_path, "")
    assert "left out of this section until it has answered every question: seakr-paper (1 of 4 questions)." in text
    assert "| seakr | 4 | 50.0 | 50.0 |" in text and "| seakr-paper | 1 |" not in text
    assert "`seakr-paper` has not answered all these questions" in text


def test_the_runs_may_be_files_named_for_the_rules_they_ran(tmp_path):
    root = tmp_path / "confirm"
    _run(root, "seakr", [1.0, 0.0], lm_calls=6, stem="seakr-rules-0-99")  # the default of its day, renamed
    _run(root, "seakr", [1.0, 0.5], lm_calls=9, stem="seakr-paper")  # the paper's rules, under method seakr
    _run(root, "cot", [0.0, 0.0])
    text = _confirm(tmp_path, "")
    assert "Several of method `seakr` (seakr (seakr-paper), seakr (seakr-rules-0-99)) and none in `seakr.jsonl`" in text
    (root / "runs" / "seakr-paper.jsonl").unlink()
    _run(root, "seakr-paper", [1.0, 0.5], lm_calls=9)
    text = _confirm(tmp_path, "")
    assert "* F1: the default SeaKR scores 50.0; the best baseline, cot, scores 0.0 (+50.0)." in text
    assert "the default SeaKR makes 6.0, SeaKR with the paper's rules 9.0. This part of the target is **met**." in text
    assert "| seakr (seakr-rules-0-99) | 2 | 50.0 | 50.0 |" in text and "| seakr-paper | 2 | -25.0 |" in text
