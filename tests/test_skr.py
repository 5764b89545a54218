"""SKR-kNN: labels from training results (the paper's Eq. 4) and the neighbours' vote (l / (k - l) >= m / n)."""

import numpy as np
import pytest
from test_cli import _seakr

from seakr_integrations.evaluation.methods import MethodAnswer
from seakr_integrations.evaluation.results import ResultsFile
from seakr_integrations.evaluation.skr import SKRkNN, SKRLabels, skr_labels


def _results(path, method, ems):
    with ResultsFile.open(path, {"method": method}) as out:
        for i, em in enumerate(ems):
            out.append({"id": f"t{i}", "question": f"train {i}", "em": em, "f1": em})


def test_labels_follow_eq_4_and_discard_questions_both_got_wrong(tmp_path):
    _results(tmp_path / "cot.jsonl", "cot", [1.0, 0.0, 1.0, 0.0])
    _results(tmp_path / "single-retrieval.jsonl", "single-retrieval", [1.0, 1.0, 0.0, 0.0])
    labels = skr_labels(tmp_path)
    assert labels.questions == ["train 0", "train 1", "train 2"]  # train 3: both wrong, discarded
    assert labels.known == [True, False, True] and labels.discarded == 1
    assert labels.describe() == {"source": str(tmp_path), "known": 2, "unknown": 1, "discarded": 1}


def test_missing_or_useless_training_results_are_explained(tmp_path):
    with pytest.raises(FileNotFoundError, match="cot.jsonl is missing.*seakr eval --dataset TRAIN.jsonl"):
        skr_labels(tmp_path)
    _results(tmp_path / "cot.jsonl", "cot", [0.0])
    _results(tmp_path / "single-retrieval.jsonl", "single-retrieval", [0.0])
    with pytest.raises(ValueError, match="got every one of the 1 training questions wrong"):
        skr_labels(tmp_path)


class Answers:
    def __init__(self, name):
        self.name, self.asked = name, []

    def describe(self):
        return {"method": self.name}

    def answer_many(self, questions):
        self.asked += list(questions)
        return [
            MethodAnswer(f"{self.name}:{q}", int(self.name == "single"), 1, 5, {"by": self.name}) for q in questions
        ]


VECTORS = {
    "near known": [1.0, 0.0],
    "near unknown": [0.0, 1.0],
    "k0": [1.0, 0.1],
    "k1": [0.9, 0.0],
    "u0": [0.0, 1.0],
    "u1": [0.1, 1.0],
    "u2": [0.2, 0.9],
}


def embed(texts):
    return np.array([VECTORS[t] for t in texts])


def test_the_vote_routes_each_question_and_records_why():
    labels = SKRLabels(["k0", "k1", "u0", "u1", "u2"], [True, True, False, False, False], 0, "train")
    cot, single = Answers("cot"), Answers("single")
    skr = SKRkNN(cot, single, labels, embed, k=2)
    # m/n = 2/3: two known neighbours (l=2, k-l=0) -> without retrieval; two unknown (l=0) -> retrieve
    assert skr.decide(["near known", "near unknown"]) == [(False, 2), (True, 0)]
    known, unknown = skr.answer_many(["near known", "near unknown"])
    assert (known.prediction, unknown.prediction) == ("cot:near known", "single:near unknown")
    assert known.trace == {"skr": {"retrieve": False, "known_neighbours": 2}, "by": "cot"}
    assert unknown.retrievals == 1 and cot.asked == ["near known"] and single.asked == ["near unknown"]
    assert skr.describe()["labels"]["known"] == 2 and skr.describe()["k"] == 2
    # a 1-1 split of the vote: l/(k-l) = 1 >= m/n = 1/2 -> known, but 1 < m/n = 2/1 -> retrieve
    mid = {"a": [1.0, 0.0], "a2": [1.0, 0.05], "b": [0.0, 1.0], "b2": [0.05, 1.0], "q": [0.2, 1.0], "q2": [1.0, 0.2]}
    few_known = SKRLabels(["a", "b", "b2"], [True, False, False], 0, "t")
    many_known = SKRLabels(["a", "a2", "b"], [True, True, False], 0, "t")
    vectors = lambda texts: np.array([mid[t] for t in texts])  # noqa: E731
    with pytest.warns(UserWarning, match="whole training set"):  # k = 3 of 3 labels, as this case needs
        assert SKRkNN(cot, single, few_known, vectors, k=3).decide(["q2"]) == [(False, 1)]  # l=1 of 3: 1/2 >= 1/2
    assert SKRkNN(cot, single, many_known, vectors, k=2).decide(["q"]) == [(True, 1)]  # b, then a2: 1 < 2
    with pytest.raises(ValueError, match="k=0"):
        SKRkNN(cot, single, labels, embed, k=0)


def test_one_sided_labels_decide_every_question_their_way():
    # No known training question (m = 0): l / (k - l) >= 0 / n holds for every vote, yet every label says retrieve.
    cot, single = Answers("cot"), Answers("single")
    all_unknown = SKRLabels(["u0", "u1", "u2"], [False, False, False], 2, "train")
    assert SKRkNN(cot, single, all_unknown, embed, k=2).decide(["near known", "near unknown"]) == [(True, 0), (True, 0)]
    all_known = SKRLabels(["k0", "k1", "k0"], [True, True, True], 0, "train")
    assert SKRkNN(cot, single, all_known, embed, k=2).decide(["near known", "near unknown"]) == [(False, 2), (False, 2)]


def test_a_vote_over_the_whole_training_set_is_flagged():
    labels = SKRLabels(["k0", "u0", "u1"], [True, False, False], 27, "train")
    with pytest.warns(UserWarning, match=r"k=3 neighbours but only 3 labelled .*27 discarded.*lower --skr-k"):
        skr = SKRkNN(Answers("cot"), Answers("single"), labels, embed, k=3)
    # every question gets l = m = 1, k - l = n = 2: the tie l / (k - l) = m / n answers all without retrieval
    assert skr.decide(["near known", "near unknown"]) == [(False, 1), (False, 1)]


def test_eval_refuses_skr_without_training_results(tmp_path):
    from seakr_integrations.demo import demo_questions_path

    done = _seakr("eval", "--dataset", str(demo_questions_path()), "--method", "skr-knn")
    assert done.returncode == 2 and "--train-results DIR" in done.stderr
    questions = str(demo_questions_path())
    done = _seakr("eval", "--dataset", questions, "--method", "skr-knn", "--train-results", str(tmp_path))
    assert done.returncode == 2 and "cot.jsonl is missing" in done.stderr


@pytest.mark.slow
def test_real_minilm_neighbours_vote_by_meaning():
    from seakr_integrations.embeddings import shared_embedder

    labels = SKRLabels(
        [
            "Who directed the film Jaws?",
            "Who directed the movie Titanic?",
            "What is the boiling point of water?",
            "At what temperature does water boil?",
        ],
        [False, False, True, True],
        0,
        "handmade",
    )
    skr = SKRkNN(Answers("cot"), Answers("single"), labels, shared_embedder().embed, k=2)
    assert skr.decide(["Which director made the film Alien?", "How hot must water get to boil?"]) == [
        (True, 0),
        (False, 2),
    ]


def test_skr_and_the_method_catalogue_do_not_import_each_other():
    """methods lists skr-knn and imports skr; skr implements the Method interface from its own module, so either can
    be imported first (in a fresh interpreter, where no earlier import hides a cycle)."""
    import ast
    import subprocess
    import sys

    import seakr_integrations.evaluation.interface as interface
    import seakr_integrations.evaluation.skr as skr

    for module in (skr, interface):
        tree = ast.parse(open(module.__file__, encoding="utf-8").read())
        imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
        imported |= {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        assert "seakr_integrations.evaluation.methods" not in imported, module.__name__
    for first in ("seakr_integrations.evaluation.skr", "seakr_integrations.evaluation.methods"):
        code = f"import {first}; from seakr_integrations.evaluation.methods import METHODS, MethodAnswer; "
        code += "from seakr_integrations.evaluation.skr import SKRkNN; assert 'skr-knn' in METHODS"
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
