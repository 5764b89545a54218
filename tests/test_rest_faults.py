"""The rest of issue 49's catalog: an unreachable Elasticsearch prints one line, a LlamaIndex retriever that
returns a string is named with what it returned, a corrupt trace names its field (and ``"answer": NaN`` is refused),
and ``--search-timeout`` says what 0 means."""

from __future__ import annotations

import json
import math
import os
import socket
import subprocess
import sys

import pytest
from fakes import ScriptedBackend
from llama_index.core.schema import QueryBundle
from llamaindex_fakes import CONFIG, QUESTION, NodeListRetriever, eiffel

from llamaindex_seakr import SeaKRLLM, SeaKRQueryEngine
from llamaindex_seakr.nodes import NodeSearch
from seakr_integrations.reasoning import RetrievalError, SeaKR, SeaKRResult
from seakr_integrations.reasoning.trace import SeaKRResult as Result


def test_an_unreachable_elasticsearch_is_one_clear_line(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{s.getsockname()[1]}"
    env = {k: v for k, v in os.environ.items() if k not in ("SEAKR_LOG_LEVEL", "PYTHONWARNINGS")}
    done = subprocess.run(
        [sys.executable, "-m", "seakr_integrations.cli", "ask", "Who wrote Hamlet?", "--es", url],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2
    assert len(lines) == 1, done.stderr[-3000:]
    assert lines[0].startswith(f"seakr: error: cannot reach Elasticsearch at {url}")


class TextNodes(NodeListRetriever):
    def _retrieve(self, query_bundle: QueryBundle):
        return "Paris is the capital of France."


class DictNodes(NodeListRetriever):
    def _retrieve(self, query_bundle: QueryBundle):
        return [{"text": "Paris"}]


def test_a_llamaindex_retriever_returning_a_string_is_named_with_what_it_must_return():
    with pytest.raises(TypeError, match=r"TextNodes returned a string \(or a list of strings\) where NodeWithScore"):
        NodeSearch(TextNodes()).search("Paris", 3)
    with pytest.raises(TypeError, match=r"DictNodes returned dict objects where NodeWithScore objects are expected"):
        NodeSearch(DictNodes()).search("Paris", 3)
    engine = SeaKRQueryEngine(TextNodes(), SeaKRLLM(backend=ScriptedBackend(eiffel)), CONFIG)
    with pytest.raises(RetrievalError, match=r"must return a list of NodeWithScore") as raised:
        engine.query(QUESTION)
    assert "AttributeError" not in str(raised.value)


@pytest.fixture(scope="module")
def trace() -> dict:
    from fakes import FakeRetriever, passage

    result = SeaKR(ScriptedBackend(eiffel), FakeRetriever(default=[passage("p1")]), CONFIG).answer(QUESTION)
    return json.loads(result.to_json())


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d.update(answer=math.nan), r"field answer holds NaN: it must be a string"),
        (lambda d: d.update(question=math.inf), r"field question holds Infinity: it must be a string"),
        (lambda d: d.update(lm_calls="3"), r"field lm_calls holds str '3': it must be a whole number"),
        (lambda d: d.update(searches=math.nan), r"field searches holds NaN: it must be a whole number"),
        (lambda d: d["steps"][0].update(pseudo_generation=7), r"field steps\[0\]\.pseudo_generation holds int 7"),
        (lambda d: d["finals"]["knowledge"].update(answer=[1]), r"field finals\.knowledge\.answer holds list"),
        (lambda d: d.pop("question"), r"the field 'question' is missing"),
    ],
)
def test_a_corrupt_trace_names_its_field(trace, change, message):
    data = json.loads(json.dumps(trace))
    change(data)
    text = json.dumps(data)  # bare NaN / Infinity, as Python's json writes them
    with pytest.raises(ValueError, match=r"malformed SeaKR trace \(schema_version 2\): " + message):
        SeaKRResult.from_json(text)


def test_a_good_trace_still_reads_back(trace):
    result = Result.from_json(json.dumps(trace))
    assert result.to_dict() == trace and result.answer


def test_search_timeout_help_says_what_0_means():
    from seakr_integrations.cli import build_parser

    for command in ("ask", "eval", "calibrate"):
        sub = build_parser()._subparsers._group_actions[0].choices[command]
        (action,) = [a for a in sub._actions if "--search-timeout" in a.option_strings]
        assert "0: no limit" in action.help and "None" not in action.help
    from seakr_integrations.cli.retriever_options import search_settings

    assert search_settings(build_parser().parse_args(["ask", "q", "--search-timeout", "0"])) == {"search_timeout": None}
