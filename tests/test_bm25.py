"""The embedded BM25 index: reopening, ranking, LLM-proof queries, and the HotpotQA corpus of data/ (building it:
``test_bm25_build.py``)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import tantivy
from bm25_fixtures import CORPUS

from seakr_integrations.retrieval import (
    BM25Index,
    Passage,
    Retriever,
)
from seakr_integrations.retrieval.bm25 import _ANALYZER, MANIFEST_NAME

ROOT = Path(__file__).resolve().parents[1]
DATA_DIR = Path(os.environ.get("SEAKR_DATA_DIR", ROOT / "data"))


@pytest.fixture(scope="module")
def hotpot(tmp_path_factory: pytest.TempPathFactory) -> BM25Index:
    corpus = DATA_DIR / "corpus_hotpotqa.jsonl"
    if not corpus.is_file():
        pytest.fail(
            f"{corpus} is not there: the repository ships it in data/ (git checkout data/, or fix SEAKR_DATA_DIR)"
        )
    return BM25Index.build(corpus, tmp_path_factory.mktemp("hotpot") / "index", progress=False)


@pytest.fixture(scope="module")
def hotpot_questions() -> list[dict]:
    path = DATA_DIR / "hotpotqa_dev.jsonl"
    if not path.is_file():
        pytest.fail(
            f"{path} is not there: the repository ships it in data/ (git checkout data/, or fix SEAKR_DATA_DIR)"
        )
    return [json.loads(line) for line in path.read_text().splitlines()]


# --- opening --------------------------------------------------------------------------------------------------


def test_open_missing_index_says_how_to_build_one(tmp_path: Path):
    with pytest.raises(
        FileNotFoundError, match=r"no BM25 index at .*`seakr index CORPUS\.jsonl --out .*BM25Index\.build"
    ):
        BM25Index(tmp_path / "nothing")
    (tmp_path / "half").mkdir()
    with pytest.raises(FileNotFoundError, match=r"not a seakr BM25 index \(it has no seakr-index\.json.*seakr index"):
        BM25Index.open(tmp_path / "half")


def test_open_rejects_newer_or_tampered_indexes(built: BM25Index, tmp_path: Path):
    manifest_path = tmp_path / "index" / MANIFEST_NAME
    manifest = json.loads(manifest_path.read_text())
    manifest_path.write_text(json.dumps({**manifest, "format_version": 99}))
    with pytest.raises(ValueError, match="newer seakr-integrations"):
        BM25Index(tmp_path / "index")
    manifest_path.write_text(json.dumps({**manifest, "num_docs": 5}))
    with pytest.raises(ValueError, match="holds 6 passages but its manifest says 5"):
        BM25Index(tmp_path / "index")
    manifest_path.write_text("{")
    with pytest.raises(ValueError, match="cannot be read"):
        BM25Index(tmp_path / "index")


# --- searching ------------------------------------------------------------------------------------------------


def test_is_a_retriever_and_passages_serialise(built: BM25Index):
    assert isinstance(built, Retriever) and not isinstance(object(), Retriever)
    hit = built.search("capital of France", k=1)[0]
    assert hit.to_dict() == {"id": "paris", "title": "Paris", "text": CORPUS[4]["text"], "score": hit.score}


def test_ranking_follows_term_frequency_and_titles(tmp_path: Path):
    rows = [
        {"id": "once", "title": "A", "text": "the river flows past the old mill and the town"},
        {"id": "twice", "title": "B", "text": "the river flows past the river mill and the town"},
        {"id": "title", "title": "River", "text": "the water flows past the old mill and the town"},
        {"id": "none", "title": "C", "text": "the road runs past the old mill and the town"},
    ]
    index = BM25Index.build(rows, tmp_path / "index", progress=False)
    hits = index.search("river", k=10)
    assert [h.id for h in hits][:2] == ["title", "twice"] and [h.id for h in hits][2] == "once"
    assert "none" not in {h.id for h in hits}
    assert all(a.score > b.score > 0 for a, b in zip(hits, hits[1:], strict=False))


def test_equal_scores_are_ordered_by_id(tmp_path: Path):
    ids = ["e", "b", "g", "a", "f", "c", "d"]
    rows = [{"id": i, "text": "identical words here"} for i in ids] + [{"id": "z", "text": "other words"}]
    index = BM25Index.build(rows, tmp_path / "index", progress=False, threads=2)
    assert [h.id for h in index.search("identical", k=2)] == ["a", "b"]
    assert [h.id for h in index.search("identical words", k=10)] == sorted(ids) + ["z"]
    assert [h.id for h in index.search("identical", k=100)] == sorted(ids)


NASTY = [
    'title:"Jim',
    "Who voiced (Pooh AND [Piglet?",
    'So the answer is: "Jim Cummings". Let me search for it -- title:Pooh^1000000 text:~bear* OR NOT Sonic',
    "what about -hedgehog +Paris",
    "capital:France",
    "[1 TO 5]",
    "field:* /regex.*/ \\ {x} <y> a=b !c & d | e",
    "AND OR NOT IN TO",
    "Jim Cummings^1e30",
    "'single' `back` ~ ^ * ? :",
    "héllo wörld 東京 ΟΔΟΣ",
    "x" * 5000,
    "pooh " * 300,
]


@pytest.mark.parametrize("query", NASTY)
def test_llm_text_never_raises(built: BM25Index, query: str):
    hits = built.search(query, k=3)
    assert isinstance(hits, list) and all(isinstance(h, Passage) for h in hits) and len(hits) <= 3


def test_query_syntax_is_plain_text(built: BM25Index):
    plain = built.search("title Jim Cummings and Pooh hedgehog 9", k=6)
    assert built.search('title:"Jim (Cummings) AND [Pooh] -hedgehog^9', k=6) == plain
    assert built.search("capital:France", k=1)[0].id == "paris"
    assert built.search("-hedgehog", k=6)[0].id == "sonic"  # a word to look for, not an exclusion
    assert built.search("*", k=3) == [] and built.search("?!", k=3) == []  # no words: nothing, not everything
    assert built.search("Piglet piglet PIGLET", k=1)[0].score == built.search("piglet", k=1)[0].score


@pytest.mark.parametrize("k", [0, -1, 1.5, True, None])
def test_k_must_be_a_positive_integer(built: BM25Index, k: object):
    with pytest.raises(ValueError, match="k="):
        built.search("Pooh", k=k)  # type: ignore[arg-type]


def test_empty_query_is_a_caller_error(built: BM25Index):
    for query in ("", "   \n"):
        with pytest.raises(ValueError, match="empty query"):
            built.search(query)
    with pytest.raises(TypeError, match="query must be a string"):
        built.search(None)  # type: ignore[arg-type]
    assert built.search("zebra") == []
    assert len(built.search("France", k=50)) == 2


# --- the HotpotQA corpus of data/ ----------------------------------------------------------------------------------


def test_hotpotqa_supporting_titles_are_found(hotpot: BM25Index, hotpot_questions: list[dict]):
    assert len(hotpot) == 2950
    first = hotpot_questions[0]  # "This singer of A Rather Blustery Day also voiced what hedgehog?"
    for title in first["supporting_titles"]:
        assert title in [p.title for p in hotpot.search(title, k=3)]
    titles = [t for q in hotpot_questions for t in q["supporting_titles"]]
    found = sum(t in [p.title for p in hotpot.search(t, k=3)] for t in titles)
    assert found / len(titles) >= 0.98  # 596/600 when written: four one-word-ish titles lose to longer matches


def test_scores_are_tantivys_query_parser_scores(hotpot: BM25Index, hotpot_questions: list[dict]):
    index = tantivy.Index.open(str(hotpot.path))
    searcher = index.searcher()
    for q in hotpot_questions[:40]:
        text = " ".join(_ANALYZER.analyze(q["question"]))  # lower-case words: nothing the parser reads as syntax
        parsed, errors = index.parse_query_lenient(text, ["title", "text"])
        assert errors == []
        expected = [score for score, _ in searcher.search(parsed, 3).hits]
        assert [p.score for p in hotpot.search(q["question"], k=3)] == pytest.approx(expected, rel=1e-5)


@pytest.mark.parametrize("k", [1, 3, 10])
def test_pruned_search_is_exact(hotpot: BM25Index, hotpot_questions: list[dict], k: int):
    pruned = 0
    for q in hotpot_questions:
        rare, common, bound = hotpot._clauses(q["question"])
        pruned += bool(rare and common) and hotpot._search_pruned(rare, common, bound, k) is not None
        exhaustive = sorted((-score, doc.get_first("id")) for score, doc in hotpot._search_exhaustive(rare + common, k))
        got = hotpot.search(q["question"], k=k)
        assert [p.id for p in got] == [i for _, i in exhaustive[:k]]
        assert [p.score for p in got] == pytest.approx([-s for s, _ in exhaustive[:k]], rel=1e-5)
    assert pruned > len(hotpot_questions) // 2  # the fast path is the usual one
