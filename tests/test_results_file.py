"""Results files resume where a run stopped, refuse another configuration, and survive a cut-short last line."""

import json

import pytest

from seakr_integrations.evaluation.results import ResultsFile, config_fingerprint, finished_results, read_results

CONFIG = {"method": "seakr", "model": "qwen", "seakr": {"k": 10, "delta": -6.0}}


def test_append_then_resume_skips_what_is_done(tmp_path):
    path = tmp_path / "runs" / "r.jsonl"
    with ResultsFile.open(path, CONFIG) as out:
        assert out.done == set()
        out.append({"id": "q1", "f1": 1.0})
        out.append({"id": "q2", "f1": 0.5})
        with pytest.raises(ValueError, match="already holds a result for question 'q1'"):
            out.append({"id": "q1", "f1": 0.0})
    with ResultsFile.open(path, dict(reversed(list(CONFIG.items())))) as out:  # key order does not matter
        assert out.done == {"q1", "q2"}
        assert [r["f1"] for r in out.records] == [1.0, 0.5]
        out.append({"id": "q3", "f1": 0.0})
    config, records = read_results(path)
    assert config == CONFIG and [r["id"] for r in records] == ["q1", "q2", "q3"]


def test_a_finished_file_kept_gzipped_reads_the_same_and_is_found_in_a_directory(tmp_path):
    import gzip

    from seakr_integrations.evaluation.summary import read_runs

    path = tmp_path / "r.jsonl"
    with ResultsFile.open(path, CONFIG) as out:
        out.append({"id": "q1", "f1": 1.0})
    packed = tmp_path / "packed" / "r.jsonl.gz"
    packed.parent.mkdir()
    packed.write_bytes(gzip.compress(path.read_bytes()))
    config, records = read_results(packed)
    assert config == CONFIG and [r["id"] for r in records] == ["q1"]
    assert [run.path for run in read_runs([packed.parent])] == [packed]
    assert finished_results(packed.parent / "r.jsonl") == packed and finished_results(path) == path
    (packed.parent / "r.jsonl").write_bytes(path.read_bytes())  # kept both ways: one run, not two
    assert [run.path for run in read_runs([packed.parent])] == [packed.parent / "r.jsonl"]


def test_a_different_configuration_is_refused_naming_the_settings(tmp_path):
    path = tmp_path / "r.jsonl"
    ResultsFile.open(path, CONFIG).close()
    other = {**CONFIG, "seakr": {"k": 20, "delta": -6.0}}
    with pytest.raises(ValueError, match=r"seakr\.k: file has 10, this run has 20.*new file"):
        ResultsFile.open(path, other)
    with pytest.raises(FileExistsError, match="exists"):
        ResultsFile.open(path, CONFIG, resume=False)
    assert config_fingerprint(CONFIG) != config_fingerprint(other)


def test_a_header_is_compared_as_it_is_so_a_file_with_a_setting_of_the_past_is_refused(tmp_path):
    """Headers are not migrated: a file written with a setting that left ``SeaKRConfig`` names it and is refused."""
    path = tmp_path / "r.jsonl"
    ResultsFile.open(path, {**CONFIG, "seakr": {**CONFIG["seakr"], "rerank": False}}).close()
    with pytest.raises(
        ValueError, match=r"will not resume into it: seakr\.rerank: file has False, this run has '<missing>'\. "
    ):
        ResultsFile.open(path, CONFIG)


def test_a_line_cut_short_by_a_crash_is_removed_and_the_question_redone(tmp_path):
    path = tmp_path / "r.jsonl"
    with ResultsFile.open(path, CONFIG) as out:
        out.append({"id": "q1"})
    with open(path, "a") as f:
        f.write('{"id": "q2", "pred')  # the process died mid-write
    with ResultsFile.open(path, CONFIG) as out:
        assert out.cut_short == len('{"id": "q2", "pred') and out.done == {"q1"}
        out.append({"id": "q2"})
    assert [json.loads(line)["id"] for line in path.read_text().splitlines()[1:]] == ["q1", "q2"]


def test_corrupt_or_foreign_files_are_refused(tmp_path):
    path = tmp_path / "r.jsonl"
    with ResultsFile.open(path, CONFIG) as out:
        out.append({"id": "q1"})
    lines = path.read_text().splitlines()
    path.write_text(lines[0] + "\nnot json\n")
    with pytest.raises(ValueError, match="line 2: not a JSON record"):
        ResultsFile.open(path, CONFIG)
    foreign = tmp_path / "questions.jsonl"
    foreign.write_text('{"id": "q1", "question": "?"}\n')
    with pytest.raises(ValueError, match="not a seakr results file"):
        ResultsFile.open(foreign, CONFIG)


def _ids(path):
    return [json.loads(line)["id"] for line in path.read_text().splitlines()[1:]]


def test_a_file_replaced_under_the_run_is_reopened_and_loses_nothing(tmp_path):
    """``git stash`` while a run wrote: appends to the old handle would land in a deleted inode."""
    path = tmp_path / "r.jsonl"
    with ResultsFile.open(path, CONFIG) as out:
        out.append({"id": "q1"})
        out.append({"id": "q2"})
        older = tmp_path / "older.jsonl"  # the committed version: q1 only, plus a result another run added
        older.write_text("\n".join(path.read_text().splitlines()[:2] + [json.dumps({"id": "q9"})]) + "\n")
        older.replace(path)
        with pytest.warns(RuntimeWarning, match=r"r\.jsonl was replaced by another file.*the 1 result\(s\)"):
            out.append({"id": "q3"})
        out.append({"id": "q4"})  # the reopened file is followed from now on, with no second warning
        assert out.done == {"q1", "q2", "q3", "q4", "q9"}
        with pytest.raises(ValueError, match="already holds a result for question 'q9'"):
            out.append({"id": "q9"})
    assert _ids(path) == ["q1", "q9", "q2", "q3", "q4"]


def test_a_file_deleted_under_the_run_is_written_again_whole(tmp_path):
    path = tmp_path / "r.jsonl"
    with ResultsFile.open(path, CONFIG) as out:
        out.append({"id": "q1"})
        out.append({"id": "q2"})
        path.unlink()
        with pytest.warns(RuntimeWarning, match=r"r\.jsonl was deleted.*the 2 result\(s\)"):
            out.append({"id": "q3"})
    config, records = read_results(path)
    assert config == CONFIG and [r["id"] for r in records] == ["q1", "q2", "q3"]


def test_a_file_replaced_by_another_configuration_is_not_written_into(tmp_path):
    path, other = tmp_path / "r.jsonl", tmp_path / "other.jsonl"
    ResultsFile.open(other, {**CONFIG, "method": "cot"}).close()
    with ResultsFile.open(path, CONFIG) as out:
        out.append({"id": "q1"})
        other.replace(path)
        with pytest.raises(ValueError, match=r"different configuration.*method: file has 'cot'"):
            out.append({"id": "q2"})
    assert _ids(path) == []
