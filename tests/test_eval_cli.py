"""`seakr eval` as a user runs it: bad input fails fast with a clear message; a real run writes resumable results."""

import json

import pytest
from test_cli import _seakr

from seakr_integrations.demo import demo_questions_path
from seakr_integrations.uncertainty import estimator_names

DATASET = str(demo_questions_path())
SMOLLM2 = ("--model", "smollm2-135m-instruct", "--backend", "hf")
"""The small model on Hugging Face (the CLI runs the reference model on vLLM unless told otherwise)."""
SMALL = (*SMOLLM2, "-k", "3", "--max-tokens", "24", "--exemplars", "2", "--limit", "2", "--batch-size", "2")


def _fails(*args, env_cache=None):
    done = _seakr("eval", *args)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    return done.stderr


def test_unknown_method_lists_the_known_ones_before_loading_anything():
    err = _fails("--dataset", DATASET, "--method", "flare9")
    assert "unknown method 'flare9'" in err and "\n  seakr: " in err and "\n  skr-knn: " in err


def test_question_file_problems_name_the_line(tmp_path):
    assert "--dataset FILE is required" in _fails()
    bad = tmp_path / "q.jsonl"
    bad.write_text('{"id": "1", "question": "Who?", "answers": ["x"]}\n{"id": "2", "question": "Who?"}\n')
    err = _fails("--dataset", str(bad))
    assert "line 2" in err and '"answers"' in err and "--skip-bad" in err
    assert "holds only 1 questions" in _fails("--dataset", str(bad), "--skip-bad", "--start", "5")


def test_an_index_that_does_not_hold_the_datasets_passages_is_refused(tmp_path, monkeypatch):
    monkeypatch.setenv("SEAKR_CACHE_DIR", str(tmp_path / "cache"))
    corpus = tmp_path / "other.jsonl"
    corpus.write_text(
        "".join(json.dumps({"id": str(i), "title": f"Topic {i}", "text": f"Text {i}."}) + "\n" for i in range(20))
    )
    err = _fails("--dataset", DATASET, "--corpus", str(corpus))
    assert "the index does not match" in err and "found 0 (0%" in err and "--no-coverage-check" in err
    assert "exclude each other" in _fails("--dataset", DATASET, "--corpus", str(corpus), "--index", str(tmp_path))


@pytest.mark.slow
def test_a_real_run_writes_scored_records_and_resumes_without_redoing_them(tmp_path):
    out = tmp_path / "run.jsonl"
    done = _seakr("eval", "--dataset", DATASET, *SMALL, "--out", str(out), "--json", "-q")
    assert done.returncode == 0, done.stderr[-3000:]
    summary = json.loads(done.stdout)["seakr"]
    lines = out.read_text().splitlines()
    header, records = json.loads(lines[0]), [json.loads(line) for line in lines[1:]]
    assert header["config"]["seakr"]["k"] == 3 and header["config"]["model"] == "smollm2-135m-instruct"
    assert sorted(r["id"] for r in records) == sorted(q["id"] for q in map(json.loads, _first_lines(2)))  # as finished
    for r in records:
        assert 0.0 <= r["f1"] <= 1.0 and r["em"] in (0.0, 1.0) and r["lm_calls"] >= 3
        assert r["generated_tokens"] > 0 and r["trace"]["steps"] and r["seconds"] > 0
        assert r["retrievals"] == r["trace"]["searches"]
    assert summary["questions"] == 2 and summary["f1"] == pytest.approx(sum(r["f1"] for r in records) / 2)

    again = _seakr("eval", "--dataset", DATASET, *SMALL, "--out", str(out), "--json", "-q")
    assert again.returncode == 0, again.stderr[-3000:]
    assert json.loads(again.stdout)["seakr"] == summary  # nothing redone: the same records
    assert out.read_text().splitlines() == lines

    other = _seakr("eval", "--dataset", DATASET, *SMOLLM2, *SMALL[6:], "-k", "4", "--out", str(out), "-q")
    assert other.returncode == 2 and "seakr.k: file has 3, this run has 4" in other.stderr


def _first_lines(n):
    import gzip

    with gzip.open(DATASET, "rt") as f:
        return [f.readline() for _ in range(n)]


def test_calibrate_needs_a_target_for_the_rate_objective():
    done = _seakr("calibrate", "--dataset", DATASET, "--objective", "rate")
    assert done.returncode == 2 and "--target-rate" in done.stderr


@pytest.mark.slow
def test_calibrate_saves_a_profile_that_ask_uses(tmp_path):
    small = (*SMOLLM2, "-k", "3", "--max-tokens", "24", "--exemplars", "2")
    small += ("--profile-dir", str(tmp_path))
    done = _seakr(
        "calibrate",
        "--dataset",
        DATASET,
        "--limit",
        "4",
        "--objective",
        "rate",
        "--target-rate",
        "0.5",
        "--all-estimators",
        *small,
        "--json",
        "-q",
    )
    assert done.returncode == 0, done.stderr[-3000:]
    profiles = {p["estimator"]: p for p in json.loads(done.stdout)}
    assert sorted(profiles) == sorted(estimator_names())  # HF has logits: energy too; and the probe
    profile = profiles["eigenscore"]
    assert profile["model"] == "smollm2-135m-instruct" and profile["k"] == 3 and profile["questions"] == 4
    for p in profiles.values():
        assert [r["first_step_retrieval_rate"] for r in p["sweep"] if r.get("chosen")] == [0.5]
    assert len({p["delta"] for p in profiles.values()}) == len(estimator_names())  # each estimator on its own scale
    question = "Which genus has more species, Bactris and Epigaea?"
    done = _seakr("ask", question, *small, "--calibrated", "--json")
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout)["config"]["delta"] == profile["delta"]
    assert "calibrated on another prompt" not in done.stderr
    assert profile["prompt"]["num_exemplars"] == 2 and "chat_answer_prefix" not in profile["prompt"]
    done = _seakr("ask", question, *small, "--exemplars", "3", "--calibrated", "--json")  # another prompt: warned
    assert done.returncode == 0, done.stderr[-3000:]
    assert "calibrated on another prompt (num_exemplars: calibrated 2, now 3)" in done.stderr
    done = _seakr("ask", question, *small, "--estimator", "perplexity", "--calibrated", "--json")
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout)["config"]["delta"] == profiles["perplexity"]["delta"]

    # seakr eval gives an estimator ablation (--estimator) its own estimator's delta.
    out = tmp_path / "run.jsonl"
    ablation = ("--method", "seakr", "--estimator", "ln_entropy")
    done = _seakr(
        "eval", "--dataset", DATASET, "--limit", "1", *ablation, *small, "--calibrated", "--out", str(out), "-q"
    )
    assert done.returncode == 0, done.stderr[-3000:]
    config = json.loads(out.read_text().splitlines()[0])["config"]["seakr"]
    assert config["estimator"] == "ln_entropy" and config["delta"] == profiles["ln_entropy"]["delta"]
    done = _seakr("ask", "Which genus?", *SMOLLM2, *small[6:], "-k", "4", "--calibrated")
    assert done.returncode == 2 and "no calibrated delta" in done.stderr and "k=4" in done.stderr


def test_results_go_to_one_file_or_one_file_per_method_in_a_directory(tmp_path):
    from seakr_integrations.cli import build_parser
    from seakr_integrations.cli.evaluate import results_path as _results_path

    def paths(*options, methods=("cot", "single-retrieval")):
        argv = ["eval", "--dataset", "data/hotpotqa_dev.jsonl", *options]
        args = build_parser().parse_args(argv + [a for m in methods for a in ("--method", m)])
        return [_results_path(args, m, len(methods)) for m in methods]

    assert paths() == ["runs/hotpotqa_dev/cot.jsonl", "runs/hotpotqa_dev/single-retrieval.jsonl"]
    assert paths("--out", "r/x.jsonl", methods=("cot",)) == ["r/x.jsonl"]
    assert paths("--out", "r/x.jsonl") == ["r/x.cot.jsonl", "r/x.single-retrieval.jsonl"]
    # --out-dir names the files as --train-results expects them (cot.jsonl, single-retrieval.jsonl).
    assert paths("--out-dir", str(tmp_path)) == [str(tmp_path / "cot.jsonl"), str(tmp_path / "single-retrieval.jsonl")]
    err = _fails("--dataset", DATASET, "--out", "a.jsonl", "--out-dir", "b")
    assert "not allowed with argument" in err


def test_with_server_the_header_names_the_servers_model_not_the_local_default():
    import argparse
    from types import SimpleNamespace

    from seakr_integrations.cli.evaluate import run_setup

    served = SimpleNamespace(model_name="smollm2")
    common = {"dataset": "data/hotpotqa_dev.jsonl", "model": "qwen", "backend": "vllm", "dtype": "float32"}
    remote = run_setup(
        argparse.Namespace(**common, server="http://127.0.0.1:8000"), {"method": "seakr"}, served, "bm25"
    )
    assert remote == {
        "method": "seakr",
        "dataset": "hotpotqa_dev.jsonl",
        "retriever": "bm25",
        "model": "smollm2",
        "backend": "server",
        "dtype": None,
    }
    local = run_setup(argparse.Namespace(**common, server=None), {"method": "seakr"}, served, "bm25")
    assert (local["model"], local["backend"], local["dtype"]) == ("qwen", "vllm", "float32")
