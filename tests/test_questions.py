"""Question files: the documented format reads, and every bad line is reported with its line number or counted."""

import gzip
import json

import pytest

from seakr_integrations.demo import demo_corpus_path, demo_questions
from seakr_integrations.evaluation import Question, read_questions
from seakr_integrations.retrieval.corpus import read_corpus

GOOD = {"id": "q1", "question": "Which country is the Eiffel Tower in?", "answers": ["France"], "context": []}


def _write(tmp_path, lines, name="q.jsonl"):
    path = tmp_path / name
    path.write_text("\n".join(line if isinstance(line, str) else json.dumps(line) for line in lines) + "\n")
    return path


def test_reads_the_documented_format_and_ignores_extra_keys(tmp_path):
    path = _write(
        tmp_path,
        [
            GOOD,
            "",
            {"id": 7, "question": " Who? ", "answers": ["a", "b"], "type": "bridge", "supporting_titles": ["T"]},
        ],
    )
    got = read_questions(path)
    assert got.questions == [
        Question("q1", "Which country is the Eiffel Tower in?", ("France",)),
        Question("7", "Who?", ("a", "b"), "bridge", ("T",)),
    ]
    assert got.skipped == [] and len(got) == 2
    assert got.questions[1].to_dict()["answers"] == ["a", "b"]


def test_gzip_and_limit(tmp_path):
    path = tmp_path / "q.jsonl.gz"
    with gzip.open(path, "wt") as f:
        for i in range(5):
            f.write(json.dumps({**GOOD, "id": f"q{i}"}) + "\n")
    assert [q.id for q in read_questions(path, limit=2).questions] == ["q0", "q1"]
    with pytest.raises(ValueError, match="limit=0"):
        read_questions(path, limit=0)


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("{not json", "line 2: invalid JSON"),
        ('["a list"]', "line 2: expected a JSON object"),
        ({"question": "q?", "answers": ["a"]}, 'line 2: "id" must be a non-empty string'),
        ({"id": "x", "answers": ["a"]}, 'line 2: "question" must be a non-empty string'),
        ({"id": "x", "question": "q?", "answers": "France"}, r'write \["France"\]'),
        ({"id": "x", "question": "q?", "answers": []}, '"answers" must be a non-empty list'),
        ({"id": "x", "question": "q?", "answers": [""]}, '"answers" must be a non-empty list'),
        ({"id": "x", "question": "q?", "answers": ["a"], "type": 3}, '"type" must be a string'),
        ({"id": "x", "question": "q?", "answers": ["a"], "supporting_titles": "T"}, '"supporting_titles" must be'),
    ],
)
def test_a_bad_line_fails_with_its_line_number(tmp_path, line, message):
    path = _write(tmp_path, [GOOD, line, {**GOOD, "id": "q3"}])
    with pytest.raises(ValueError, match=message) as err:
        read_questions(path)
    assert str(path) in str(err.value) and "--skip-bad" in str(err.value)


def test_skip_bad_counts_what_it_leaves_out(tmp_path):
    path = _write(tmp_path, [GOOD, "{not json", {**GOOD, "id": "q2", "answers": "x"}, {**GOOD, "id": "q3"}])
    got = read_questions(path, skip_bad=True)
    assert [q.id for q in got.questions] == ["q1", "q3"]
    assert len(got.skipped) == 2 and "line 2" in got.skipped[0] and "line 3" in got.skipped[1]


def test_repeated_id_and_empty_file_are_errors_even_when_skipping(tmp_path):
    with pytest.raises(ValueError, match="'q1' was already used on line 1"):
        read_questions(_write(tmp_path, [GOOD, GOOD]), skip_bad=True)
    with pytest.raises(ValueError, match="no valid question"):
        read_questions(_write(tmp_path, ["{bad"], name="bad.jsonl"), skip_bad=True)
    with pytest.raises(FileNotFoundError):
        read_questions(tmp_path / "missing.jsonl")


def test_bundled_demo_questions_have_their_supporting_paragraphs_in_the_demo_corpus():
    questions = demo_questions()
    assert len(questions) == 20 and len({q.id for q in questions}) == 20
    titles = {p.title for p in read_corpus(demo_corpus_path())}
    for q in questions:
        assert q.answers and q.supporting_titles and set(q.supporting_titles) <= titles, q.id
