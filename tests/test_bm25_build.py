"""Building the embedded BM25 index: corpus validation, atomic builds, clear errors, nothing half-built."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from bm25_fixtures import CORPUS, leftovers, write_jsonl

from seakr_integrations.retrieval import BM25Index, Passage, bm25_build
from seakr_integrations.retrieval.bm25 import MANIFEST_NAME
from seakr_integrations.retrieval.bm25_build import _remove_dir
from seakr_integrations.retrieval.corpus import iter_passages, read_corpus, validate_passage

# --- building and reopening -------------------------------------------------------------------------------------


def test_build_from_jsonl_then_reopen(built: BM25Index, tmp_path: Path):
    assert len(built) == len(CORPUS) and built.path == tmp_path / "index"
    assert repr(built) == f"BM25Index({str(tmp_path / 'index')!r}, num_docs=6)"
    manifest = json.loads((tmp_path / "index" / MANIFEST_NAME).read_text())
    assert manifest["num_docs"] == 6 and manifest["tantivy"] == "0.27.0" and manifest["format_version"] == 1
    assert manifest["source"].endswith("corpus.jsonl") and manifest["created"]
    first = built.search("voice actor Pooh", k=2)
    for again in (BM25Index(tmp_path / "index"), BM25Index.open(str(tmp_path / "index"))):
        assert len(again) == 6 and again.search("voice actor Pooh", k=2) == first
    assert first[0] == Passage("cummings", "Jim Cummings", CORPUS[2]["text"], first[0].score)
    assert leftovers(tmp_path) == []


def test_build_from_iterable_of_dicts_and_passages(tmp_path: Path):
    items = [
        {"id": 7, "text": "Seven is a number."},
        Passage("p", "Pi", "Pi is about 3.14159."),
        {"id": "n", "title": None, "text": "Null title."},
    ]
    index = BM25Index.build(iter(items), tmp_path / "index", progress=False)
    assert len(index) == 3
    (hit,) = index.search("number", k=1)
    assert (hit.id, hit.title, hit.text) == ("7", "", "Seven is a number.")
    assert index.search("pi", k=1)[0].title == "Pi"
    assert json.loads((tmp_path / "index" / MANIFEST_NAME).read_text())["source"] == "<list_iterator>"


def test_gzip_corpus(tmp_path: Path):
    corpus = write_jsonl(tmp_path / "corpus.jsonl.gz", CORPUS, compress=True)
    assert [p.id for p in read_corpus(corpus)] == [r["id"] for r in CORPUS]
    index = BM25Index.build(corpus, tmp_path / "index", progress=False)
    assert index.search("hedgehog", k=1)[0].id == "sonic"


def test_corrupt_gzip_names_the_file(tmp_path: Path):
    data = gzip.compress(("\n".join(json.dumps(r) for r in CORPUS * 50) + "\n").encode())
    corpus = tmp_path / "corpus.jsonl.gz"
    corpus.write_bytes(data[: len(data) // 2])
    with pytest.raises(ValueError, match=r"corpus\.jsonl\.gz: the gzip data is corrupt or truncated"):
        list(read_corpus(corpus))


def test_progress_bar_goes_to_stderr_only_when_asked(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    BM25Index.build(CORPUS, tmp_path / "a", progress=True)
    out, err = capsys.readouterr()
    assert out == "" and "6/6" in err and "passages" in err
    BM25Index.build(CORPUS, tmp_path / "b", progress=False)
    assert capsys.readouterr() == ("", "")


def test_rebuild_replaces_the_index_and_leaves_nothing_behind(built: BM25Index, tmp_path: Path):
    new = BM25Index.build([{"id": "x", "text": "Completely different content."}], tmp_path / "index", progress=False)
    assert len(new) == 1 and new.search("content")[0].id == "x"
    assert len(BM25Index(tmp_path / "index")) == 1
    assert leftovers(tmp_path) == []


def test_overwrite_false_refuses_an_existing_index(built: BM25Index, tmp_path: Path):
    with pytest.raises(FileExistsError, match="overwrite=True"):
        BM25Index.build(CORPUS[:1], tmp_path / "index", overwrite=False, progress=False)
    assert len(BM25Index(tmp_path / "index")) == 6


def test_refuses_to_replace_a_directory_that_is_not_an_index(tmp_path: Path):
    out = tmp_path / "notes"
    out.mkdir()
    (out / "thesis.txt").write_text("precious")
    with pytest.raises(FileExistsError, match="not a seakr index .* refusing"):
        BM25Index.build(CORPUS, out, progress=False)
    assert (out / "thesis.txt").read_text() == "precious" and leftovers(tmp_path) == []
    (tmp_path / "file").write_text("x")
    with pytest.raises(FileExistsError, match="not a seakr index"):
        BM25Index.build(CORPUS, tmp_path / "file", progress=False)
    assert (tmp_path / "file").read_text() == "x"


def test_refuses_to_replace_a_symlink(built: BM25Index, tmp_path: Path):
    (tmp_path / "link").symlink_to(tmp_path / "index")
    with pytest.raises(FileExistsError, match="symbolic link"):
        BM25Index.build(CORPUS[:1], tmp_path / "link", progress=False)
    assert len(BM25Index(tmp_path / "link")) == 6 and leftovers(tmp_path) == []


def test_builds_into_an_empty_directory_and_creates_parents(tmp_path: Path):
    (tmp_path / "empty").mkdir()
    assert len(BM25Index.build(CORPUS, tmp_path / "empty", progress=False)) == 6
    assert len(BM25Index.build(CORPUS, tmp_path / "a" / "b" / "index", progress=False)) == 6


def test_several_writer_threads_and_small_memory(tmp_path: Path):
    rows = [{"id": f"d{i}", "title": f"Doc {i}", "text": f"word{i % 7} common text number {i}"} for i in range(3000)]
    index = BM25Index.build(rows, tmp_path / "index", progress=False, threads=2, memory_budget_mb=30)
    assert len(index) == 3000
    assert {p.id for p in index.search("word3", k=500)} == {f"d{i}" for i in range(3000) if i % 7 == 3}
    with pytest.raises(ValueError, match="15 MB per writer thread"):
        BM25Index.build(rows, tmp_path / "other", threads=2, memory_budget_mb=20)
    with pytest.raises(ValueError, match="threads"):
        BM25Index.build(rows, tmp_path / "other", threads=0)
    assert not (tmp_path / "other").exists() and leftovers(tmp_path) == []


# --- bad input: clear messages, nothing half-built ------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('{"id": "b", "text": "unterminated', r"line 2: invalid JSON .*column"),
        ('["b", "text"]', r'line 2: expected a JSON object .*got list; write each passage as e\.g\. \{"id"'),
        ('{"title": "T", "text": "t"}', r'line 2: "id" is missing'),
        ('{"id": "", "text": "t"}', r'line 2: "id" is empty'),
        ('{"id": 1.5, "text": "t"}', r'line 2: "id" must be a string \(or an integer\), got float'),
        ('{"id": true, "text": "t"}', r'line 2: "id" must be a string .*got bool'),
        ('{"id": "b", "title": "T"}', r'line 2: "text" is missing'),
        ('{"id": "b", "text": "   "}', r"line 2: \"text\" of passage 'b' is empty"),
        ('{"id": "b", "text": ["t"]}', r'line 2: "text" must be a string, got list'),
        ('{"id": "b", "title": 3, "text": "t"}', r'line 2: "title" must be a string'),
    ],
)
def test_bad_line_names_file_and_line_and_builds_nothing(tmp_path: Path, line: str, message: str):
    corpus = write_jsonl(tmp_path / "corpus.jsonl", [CORPUS[0], line, CORPUS[1]])
    with pytest.raises(ValueError, match=r"corpus\.jsonl, " + message):
        BM25Index.build(corpus, tmp_path / "index", progress=False)
    assert not (tmp_path / "index").exists() and leftovers(tmp_path) == []


def test_bad_line_keeps_the_previous_index(built: BM25Index, tmp_path: Path):
    bad = write_jsonl(tmp_path / "bad.jsonl", [{"id": "new", "text": "new text"}, "{oops"])
    with pytest.raises(ValueError, match=r"bad\.jsonl, line 2: invalid JSON"):
        BM25Index.build(bad, tmp_path / "index", progress=False)
    again = BM25Index(tmp_path / "index")
    assert len(again) == 6 and again.search("hedgehog", k=1)[0].id == "sonic"
    assert leftovers(tmp_path) == []


def test_invalid_utf8_names_the_line(tmp_path: Path):
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_bytes(json.dumps(CORPUS[0]).encode() + b'\n{"id": "b", "text": "caf\xe9"}\n')
    with pytest.raises(ValueError, match=r"line 2: not valid UTF-8"):
        list(read_corpus(corpus))


def test_duplicate_ids_name_both_places(tmp_path: Path):
    corpus = write_jsonl(tmp_path / "corpus.jsonl", [CORPUS[0], CORPUS[1], "", {"id": "pooh", "text": "again"}])
    with pytest.raises(ValueError, match=r"corpus\.jsonl, line 4: id 'pooh' was already used on line 1"):
        BM25Index.build(corpus, tmp_path / "index", progress=False)
    with pytest.raises(ValueError, match=r"item 3: id '7' was already used by item 1"):
        BM25Index.build([{"id": 7, "text": "a"}, {"id": 8, "text": "b"}, {"id": "7", "text": "c"}], tmp_path / "i")
    assert leftovers(tmp_path) == [] and not (tmp_path / "index").exists()


@pytest.mark.parametrize("error", [KeyboardInterrupt, RuntimeError])
def test_interrupted_build_keeps_the_previous_index(built: BM25Index, tmp_path: Path, error: type[BaseException]):
    def passages():
        for i in range(500):
            if i == 300:
                raise error("stopped")
            yield {"id": f"n{i}", "text": f"new passage {i}"}

    with pytest.raises(error, match="stopped"):
        BM25Index.build(passages(), tmp_path / "index", progress=False)
    again = BM25Index(tmp_path / "index")
    assert len(again) == 6 and again.search("new passage") == []
    assert leftovers(tmp_path) == []


@pytest.mark.parametrize("rows", [[], ["", "   "]])
def test_empty_corpus_is_an_error(tmp_path: Path, rows: list[str]):
    corpus = write_jsonl(tmp_path / "corpus.jsonl", rows)
    with pytest.raises(ValueError, match="no passages"):
        BM25Index.build(corpus, tmp_path / "index", progress=False)
    with pytest.raises(ValueError, match="no passages"):
        BM25Index.build([], tmp_path / "index", progress=False)
    assert not (tmp_path / "index").exists() and leftovers(tmp_path) == []


def test_cleanup_retries_while_a_late_lock_file_reappears(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    # Tantivy's garbage collection can create .tantivy-meta.lock in a directory being deleted: the first rmtree
    # then leaves the directory behind.  Simulated here by a lock file that reappears after the first deletion.
    directory = tmp_path / ".index.building-x"
    directory.mkdir()
    real_rmtree, calls = bm25_build.shutil.rmtree, []

    def racing_rmtree(path: Path, ignore_errors: bool = False) -> None:
        real_rmtree(path, ignore_errors=ignore_errors)
        calls.append(path)
        if len(calls) == 1:
            directory.mkdir()
            (directory / ".tantivy-meta.lock").touch()

    monkeypatch.setattr(bm25_build.shutil, "rmtree", racing_rmtree)
    _remove_dir(directory)
    assert len(calls) == 2 and leftovers(tmp_path) == []


def test_cleanup_that_cannot_delete_warns_with_the_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    directory = tmp_path / ".index.building-y"
    directory.mkdir()
    tries: list[Path] = []
    waits: list[float] = []
    monkeypatch.setattr(bm25_build.shutil, "rmtree", lambda path, ignore_errors=False: tries.append(path))
    monkeypatch.setattr(bm25_build.time, "sleep", waits.append)
    with pytest.warns(RuntimeWarning, match=r"could not delete .*\.index\.building-y; delete it by hand"):
        _remove_dir(directory, attempts=4)
    assert len(tries) == 4 and len(waits) == 3  # a wait between tries, none after the last one before warning


def test_missing_corpus_and_wrong_argument_types(tmp_path: Path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        BM25Index.build(tmp_path / "nope.jsonl", tmp_path / "index")
    with pytest.raises(TypeError, match="wrap a single passage in a list"):
        BM25Index.build(CORPUS[0], tmp_path / "index")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        iter_passages(b"corpus.jsonl")  # type: ignore[arg-type]
    assert not (tmp_path / "index").exists()


def test_an_iterable_corpus_is_opened_when_the_passages_are_read_not_before():
    opened = []

    class Cursor:
        def __iter__(self):
            opened.append(True)
            return iter(CORPUS)

    passages = iter_passages(Cursor())
    assert opened == []  # a cursor or a file-backed iterable is not opened by the call itself
    assert [p.id for p in passages] == [r["id"] for r in CORPUS] and opened == [True]


def test_read_corpus_skips_blank_lines_and_a_bom(tmp_path: Path):
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_bytes(b"\xef\xbb\xbf" + json.dumps(CORPUS[0]).encode() + b"\n\n  \n" + json.dumps(CORPUS[1]).encode())
    assert [p.id for p in read_corpus(corpus)] == ["pooh", "piglet"]
    corpus.write_bytes(b"\n\n\n{bad\n")
    with pytest.raises(ValueError, match="line 4"):
        list(read_corpus(corpus))


def test_validate_passage():
    assert validate_passage({"id": 3, "text": "t", "url": "ignored"}, "item 1") == Passage("3", "", "t")
    p = Passage("a", "A", "text", 1.5)
    assert validate_passage(p, "item 1") is p
    with pytest.raises(ValueError, match=r"^item 17: expected a JSON object .*got str"):
        validate_passage("just text", "item 17")
    with pytest.raises(ValueError, match=r"^item 2: \"id\" is empty"):
        validate_passage(Passage(" ", "", "t"), "item 2")
