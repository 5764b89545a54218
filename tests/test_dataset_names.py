"""The short ``--dataset`` names (hotpotqa, 2wiki, nq_open): which files they stand for, that a real file always
wins, and what a user is told when neither a file nor a data folder is there.  No model is loaded."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from seakr_integrations.cli import build_parser, questions
from seakr_integrations.cli.evaluate import results_path
from seakr_integrations.cli.questions import DATASET_NAMES, DatasetFiles, data_dirs, resolve_dataset

ROOT = Path(__file__).resolve().parents[1]
QUESTION = '{"id": "q1", "question": "Which country is the Eiffel Tower in?", "answers": ["France"]}\n'


def _data(folder: Path, *names: str) -> Path:
    """A ``data/`` folder under ``folder`` holding one question line (and a corpus line) per name."""
    data = folder / "data"
    data.mkdir(parents=True)
    for name in names:
        (data / f"{name}_dev.jsonl").write_text(QUESTION)
        if name != "nq_open":
            (data / f"corpus_{name}.jsonl").write_text('{"id": "p1", "title": "Eiffel Tower", "text": "Paris."}\n')
    return data


def _args(*options: str) -> argparse.Namespace:
    return build_parser().parse_args(["eval", *options, "-q"])


def test_each_short_name_stands_for_its_question_file_and_corpus(tmp_path: Path):
    data = _data(tmp_path, *DATASET_NAMES)
    assert resolve_dataset("hotpotqa", [data]) == DatasetFiles(
        data / "hotpotqa_dev.jsonl", data / "corpus_hotpotqa.jsonl"
    )
    assert resolve_dataset("2wiki", [data]) == DatasetFiles(data / "2wiki_dev.jsonl", data / "corpus_2wiki.jsonl")
    assert resolve_dataset("nq_open", [data]) == DatasetFiles(data / "nq_open_dev.jsonl", None)  # no passages


def test_the_first_folder_that_holds_the_file_is_used(tmp_path: Path):
    empty, full = tmp_path / "empty", _data(tmp_path / "full", "2wiki")
    empty.mkdir()
    assert resolve_dataset("2wiki", [empty, full]).questions == full / "2wiki_dev.jsonl"


def test_an_existing_file_wins_over_the_short_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    data = _data(tmp_path, "hotpotqa")
    monkeypatch.chdir(tmp_path)
    Path("hotpotqa").write_text(QUESTION)  # a file named like a short name, in the working directory
    assert resolve_dataset("hotpotqa", [data]) == DatasetFiles(Path("hotpotqa"), None)
    own = tmp_path / "mine.jsonl"
    own.write_text(QUESTION)
    assert resolve_dataset(str(own), [data]) == DatasetFiles(own, None)  # a path never picks a corpus


def test_the_working_directory_comes_before_the_clone_of_the_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.chdir(tmp_path)
    assert data_dirs() == [tmp_path / "data", ROOT / "data"]
    _data(tmp_path, "hotpotqa")
    assert resolve_dataset("hotpotqa").questions == tmp_path / "data" / "hotpotqa_dev.jsonl"
    monkeypatch.chdir(ROOT)
    assert data_dirs() == [ROOT / "data"]  # at the root of the clone the two are one folder, looked in once


def test_this_clone_resolves_every_short_name_from_anywhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.chdir(tmp_path)  # nothing here: the clone the package is imported from is used
    for name in DATASET_NAMES:
        files = resolve_dataset(name)
        assert files.questions == ROOT / "data" / f"{name}_dev.jsonl" and files.questions.is_file()
        assert files.corpus is None if name == "nq_open" else files.corpus == ROOT / "data" / f"corpus_{name}.jsonl"


def test_a_short_name_without_a_data_folder_says_what_to_pass_instead(tmp_path: Path):
    with pytest.raises(FileNotFoundError) as err:
        resolve_dataset("hotpotqa", [tmp_path / "data"])
    message = str(err.value)
    assert str(tmp_path / "data") in message and "does not ship" in message
    assert "--dataset PATH/hotpotqa_dev.jsonl --corpus PATH/corpus_hotpotqa.jsonl" in message
    with pytest.raises(FileNotFoundError, match=r"--dataset PATH/nq_open_dev\.jsonl\Z"):
        resolve_dataset("nq_open", [tmp_path / "data"])


def test_a_missing_corpus_beside_the_questions_is_an_error_not_a_silent_default(tmp_path: Path):
    data = _data(tmp_path, "hotpotqa")
    (data / "corpus_hotpotqa.jsonl").unlink()
    with pytest.raises(FileNotFoundError, match=r"not its corpus corpus_hotpotqa\.jsonl.*--corpus, --index or --es"):
        resolve_dataset("hotpotqa", [data])


def test_neither_a_file_nor_a_short_name_lists_the_names(tmp_path: Path):
    with pytest.raises(FileNotFoundError, match=r"--dataset hotpot: not a file\. .*hotpotqa, 2wiki, nq_open"):
        resolve_dataset("hotpot", [tmp_path])
    with pytest.raises(FileNotFoundError, match="not a file"):
        resolve_dataset(str(tmp_path), [tmp_path])  # a folder is not a question file


def test_load_questions_names_the_file_and_the_corpus_in_args(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    data = _data(tmp_path, *DATASET_NAMES)
    monkeypatch.setattr(questions, "data_dirs", lambda: [data])
    args = _args("--dataset", "hotpotqa")
    assert [q.id for q in questions.load_questions(args)] == ["q1"]
    # Results files and profiles are named after the file, as when its path is given: runs/hotpotqa_dev/...
    assert (args.dataset, args.corpus) == (str(data / "hotpotqa_dev.jsonl"), str(data / "corpus_hotpotqa.jsonl"))
    assert results_path(args, "seakr", 1) == str(Path("runs") / "hotpotqa_dev" / "seakr.jsonl")
    args = _args("--dataset", "nq_open")
    questions.load_questions(args)
    assert (args.dataset, args.corpus) == (str(data / "nq_open_dev.jsonl"), None)  # the usual default corpus


@pytest.mark.parametrize("option", [["--corpus", "other.jsonl"], ["--index", "idx"], ["--es", "http://es:9200"]])
def test_a_given_retriever_is_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, option: list[str]):
    data = _data(tmp_path, "2wiki")
    monkeypatch.setattr(questions, "data_dirs", lambda: [data])
    args = _args("--dataset", "2wiki", *option)
    questions.load_questions(args)
    assert args.dataset == str(data / "2wiki_dev.jsonl")
    assert args.corpus == (option[1] if option[0] == "--corpus" else None)


def test_a_path_is_left_as_given(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    _data(tmp_path, "hotpotqa")
    monkeypatch.chdir(tmp_path)
    args = _args("--dataset", "data/hotpotqa_dev.jsonl")
    questions.load_questions(args)
    assert (args.dataset, args.corpus) == ("data/hotpotqa_dev.jsonl", None)


def test_the_short_name_is_reported_unless_quiet(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys):
    data = _data(tmp_path, "hotpotqa")
    monkeypatch.setattr(questions, "data_dirs", lambda: [data])
    args = build_parser().parse_args(["calibrate", "--dataset", "hotpotqa"])
    questions.load_questions(args)
    assert capsys.readouterr().err == (
        f"seakr: --dataset hotpotqa: {data / 'hotpotqa_dev.jsonl'}, searching {data / 'corpus_hotpotqa.jsonl'}\n"
    )
