"""``seakr report``: the method table of any results files, and paired F1 differences against one run."""

import pytest

from seakr_integrations.cli import main
from seakr_integrations.evaluation.results import ResultsFile
from seakr_integrations.evaluation.summary import paired_differences, read_runs, summary_markdown


def _write(folder, method, f1s, *, stem=None, dataset="mine.jsonl", ids=None):
    """A results file as ``seakr eval`` writes it: a header, then one record per question."""
    config = {"method": method, "dataset": dataset, "model": "m", "backend": "hf", "seakr": {"k": 4}}
    path = folder / f"{stem or method}.jsonl"
    with ResultsFile.open(path, config) as out:
        for i, f1 in zip(ids or range(len(f1s)), f1s, strict=True):
            out.append(
                {
                    "id": f"q{i}",
                    "prediction": "p",
                    "em": float(f1 == 1.0),
                    "f1": f1,
                    "retrievals": 2,
                    "lm_calls": 5,
                    "generated_tokens": 30,
                    "seconds": 1.5,
                }
            )
    return path


def test_the_table_has_every_run_best_f1_first_labelled_by_file(tmp_path):
    _write(tmp_path, "plain", [0.0, 0.5, 1.0, 0.5])
    _write(tmp_path, "mine", [1.0, 1.0, 0.5, 0.0])
    _write(tmp_path, "mine", [1.0, 1.0, 1.0, 0.0], stem="mine-tuned")  # one method, other settings, --out
    text = summary_markdown(read_runs([tmp_path]))
    rows = [line for line in text.splitlines() if line.startswith("| ") and "---" not in line][1:]
    assert rows[0].startswith("| mine (mine-tuned) | 4 | 75.0 | 75.0 | ")
    assert rows[1].startswith("| mine | 4 | 50.0 | 62.5 | ")
    assert rows[2].startswith("| plain | 4 | 25.0 | 50.0 | ") and rows[2].endswith("| 2.00 | 5.0 | 30 | 1.5 |")
    assert "## mine\n" in text and "F1 difference" not in text  # no --against: no paired table
    assert f"* `{tmp_path / 'plain.jsonl'}`" in text


def test_against_a_run_gives_paired_differences_on_shared_questions(tmp_path):
    _write(tmp_path, "mine", [1.0, 1.0, 0.5, 0.0, 1.0])
    _write(tmp_path, "plain", [0.0, 0.0, 0.5, 0.0, 0.0, 1.0])  # one question more: left out of the comparison
    runs = read_runs([tmp_path])
    (diff,) = paired_differences(runs[0], runs)
    assert (diff.name, diff.questions, diff.mean, diff.higher, diff.lower, diff.equal) == ("plain", 5, 0.6, 3, 0, 2)
    assert 0 < diff.low <= 0.6 <= diff.high <= 1
    text = summary_markdown(runs, against="mine")
    assert "Compared on the 5 questions every file holds." in text
    assert "| plain | 5 | 50.0 | 50.0 | 0.0-100.0 |" not in text and "| plain | 5 | 0.0 | 10.0 |" in text
    assert "| plain | 5 | +60.0 | " in text and text.count("| mine | 5 |") == 1  # not against itself


def test_against_takes_a_file_name_and_says_where_the_run_is_missing(tmp_path):
    _write(tmp_path / "a", "mine", [1.0, 0.0], stem="mine-tuned")
    _write(tmp_path / "a", "plain", [0.0, 0.0])
    _write(tmp_path / "b", "plain", [1.0, 1.0], dataset="other.jsonl")
    text = summary_markdown(read_runs([tmp_path]), against="mine-tuned")
    assert "mine (mine-tuned) against each run on the same questions" in text and "| plain | 2 | +50.0 | " in text
    assert "No run named mine-tuned on other." in text
    with pytest.raises(ValueError, match=r"--against nobody: no such run; the runs are mine \(mine-tuned\), plain"):
        summary_markdown(read_runs([tmp_path]), against="nobody")


def test_files_that_share_no_question_are_shown_whole(tmp_path):
    _write(tmp_path, "mine", [1.0], ids=[7])
    _write(tmp_path, "plain", [0.0, 0.5])
    text = summary_markdown(read_runs([tmp_path]))
    assert "These files share no question." in text and "| mine | 1 | 100.0 |" in text and "| plain | 2 | " in text


def test_seakr_report_prints_or_writes_the_summary(tmp_path, capsys):
    _write(tmp_path / "runs", "mine", [1.0, 0.0])
    _write(tmp_path / "runs", "plain", [0.0, 0.0])
    assert main(["report", str(tmp_path / "runs"), "--against", "plain"]) == 0
    printed = capsys.readouterr().out
    assert printed.startswith("# Evaluation results\n") and "| mine | 2 | -50.0 | " in printed  # plain minus mine
    out = tmp_path / "docs" / "summary.md"
    assert main(["report", str(tmp_path / "runs"), "--out", str(out), "--title", "Mine"]) == 0
    assert out.read_text().startswith("# Mine\n") and "wrote" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["missing.jsonl"], "missing.jsonl"),
        (["EMPTY"], "no results files"),
        (["RUNS", "--against", "nobody"], "no such run"),
        (["RUNS", "--confirmation", "RUNS"], None),  # the project's options are not the library's
    ],
)
def test_seakr_report_names_bad_input(tmp_path, capsys, args, message):
    _write(tmp_path / "runs", "mine", [1.0])
    (tmp_path / "empty").mkdir()
    paths = {"RUNS": str(tmp_path / "runs"), "EMPTY": str(tmp_path / "empty")}
    argv = ["report", *(paths.get(a, str(tmp_path / a) if a.endswith(".jsonl") else a) for a in args)]
    if message is None:
        with pytest.raises(SystemExit) as exit_:
            main(argv)
        assert exit_.value.code == 2 and "--confirmation" in capsys.readouterr().err
        return
    assert main(argv) == 2
    assert message in capsys.readouterr().err


def test_a_finished_run_kept_gzipped_is_named_as_if_it_were_not(tmp_path):
    import gzip

    for path in (_write(tmp_path, "mine", [1.0, 0.0], stem="mine-tuned"), _write(tmp_path, "plain", [0.0, 0.0])):
        path.with_name(path.name + ".gz").write_bytes(gzip.compress(path.read_bytes()))
        path.unlink()
    text = summary_markdown(read_runs([tmp_path]), against="mine-tuned")
    assert "| mine (mine-tuned) | 2 |" in text and "| plain | 2 | +50.0 | " in text
    assert "plain (plain" not in text
