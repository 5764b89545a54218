"""The Elasticsearch back-end's settings and bad-input paths, without a cluster: connection settings from arguments
and the environment, secrets that never show, authentication failures (a local stub answers 401/403 the way
Elasticsearch does, since the emulator does not check credentials), an unreachable cluster (refused, and silent
until the timeout), and the ``seakr index --es`` command's errors."""

from __future__ import annotations

import base64
import logging
import pickle
import socket
import time
from collections.abc import Iterator

import pytest
from es_server import StubServer, free_port

from seakr_integrations.cli import main
from seakr_integrations.retrieval import (
    AuthenticationError,
    ClusterUnreachableError,
    ElasticsearchBackendError,
    ElasticsearchRetriever,
    build_elasticsearch_index,
)
from seakr_integrations.retrieval.es_connection import ElasticsearchConnection, Secret

pytest.importorskip(
    "elasticsearch", reason="the Elasticsearch back-end needs: pip install 'seakr-integrations[elasticsearch]'"
)

API_KEY = "VnVhQ2ZHY0JDZGJrUW0tZTVhT3g6dWkybHAyYXhUTm1zeWFrdzl0dk5udw=="  # base64("VuaCfGcBCdbkQm-e5aOx:ui2l...")
KEY_ID, KEY_SECRET = base64.b64decode(API_KEY).decode().split(":")
PASSWORD = "hunter2-correct-horse"
CLEAN_ENV: dict[str, str] = {}


@pytest.fixture(autouse=True)
def no_cluster_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests name their servers themselves; the environment's cluster and credentials must not leak in."""
    for name in ("URL", "API_KEY", "USERNAME", "PASSWORD", "CA_CERTS"):
        monkeypatch.delenv(f"ELASTICSEARCH_{name}", raising=False)


def assert_no_secret(text: str) -> None:
    for secret in (API_KEY, KEY_SECRET, PASSWORD, f"{KEY_ID}:{KEY_SECRET}"):
        assert secret not in text, f"a secret leaked into: {text}"


# ------------------------------------------------------------------------------------------------------- settings
def test_settings_from_the_environment_and_arguments_win():
    env = {"ELASTICSEARCH_URL": "https://es.example.org:9243/", "ELASTICSEARCH_API_KEY": API_KEY}
    conn = ElasticsearchConnection.from_env(environ=env)
    assert conn.url == "https://es.example.org:9243" and conn.auth == "api key"
    assert conn.auth_source == "ELASTICSEARCH_API_KEY" and conn.api_key.reveal() == API_KEY
    assert conn.client_options()["api_key"] == API_KEY and "basic_auth" not in conn.client_options()
    # arguments replace the environment's URL and its credentials as a whole
    conn = ElasticsearchConnection.from_env("http://localhost:9200", username="elastic", password=PASSWORD, environ=env)
    assert conn.url == "http://localhost:9200" and conn.auth == "basic (user elastic)" and conn.api_key is None
    assert conn.client_options()["basic_auth"] == ("elastic", PASSWORD)
    conn = ElasticsearchConnection.from_env(
        environ={"ELASTICSEARCH_URL": "http://h:9200", "ELASTICSEARCH_CA_CERTS": "/etc/ca.pem"}
    )
    assert conn.auth == "none" and conn.ca_certs == "/etc/ca.pem" and conn.client_options()["ca_certs"] == "/etc/ca.pem"
    # a URL without a port gets its scheme's, as any URL (the client needs one)
    assert ElasticsearchConnection.from_env("https://abc.es.example.io", environ=CLEAN_ENV).url == (
        "https://abc.es.example.io:443"
    )
    assert ElasticsearchConnection.from_env("http://[::1]", environ=CLEAN_ENV).url == "http://[::1]:80"


def test_user_info_in_the_url_becomes_basic_auth_and_is_never_shown():
    conn = ElasticsearchConnection.from_env(f"http://elastic:{PASSWORD}@127.0.0.1:9200", environ=CLEAN_ENV)
    assert conn.url == "http://127.0.0.1:9200" and conn.username == "elastic"
    assert conn.password.reveal() == PASSWORD and conn.auth_source == "the user info in the URL"
    assert_no_secret(repr(conn) + str(conn))
    with pytest.raises(ValueError) as err:
        ElasticsearchConnection.from_env(f"ftp://elastic:{PASSWORD}@host", environ=CLEAN_ENV)
    assert "not shown" in str(err.value)
    assert_no_secret(str(err.value))


@pytest.mark.parametrize(
    ("kwargs", "env", "message"),
    [
        ({}, {}, "no Elasticsearch URL: pass url= (--es URL on the command line) or set ELASTICSEARCH_URL"),
        ({"url": "localhost:9200"}, {}, "must look like http://HOST:PORT"),
        ({"url": "http://h:99999"}, {}, "is malformed"),
        ({"url": "http://h", "api_key": API_KEY, "password": PASSWORD, "username": "u"}, {}, "use one of them"),
        ({"url": "http://h"}, {"ELASTICSEARCH_USERNAME": "u"}, "the password is missing (from ELASTICSEARCH_USERNAME)"),
        ({"url": "http://h", "password": PASSWORD}, {}, "the username is missing"),
        ({"url": "http://h", "request_timeout": 0}, {}, "request_timeout=0: must be a number of seconds > 0"),
        ({"url": "http://h", "max_retries": -1}, {}, "max_retries=-1: must be an integer >= 0"),
    ],
)
def test_bad_settings_say_what_to_change_without_the_secret(kwargs, env, message):
    with pytest.raises(ValueError) as err:
        ElasticsearchConnection.from_env(**kwargs, environ=env)
    assert message in str(err.value)
    assert_no_secret(str(err.value))


def test_secrets_never_show_in_repr_str_or_pickle():
    conn = ElasticsearchConnection.from_env("http://h:9200", api_key=API_KEY, environ=CLEAN_ENV)
    assert repr(conn.api_key) == str(conn.api_key) == f"{conn.api_key}" == "'***'"
    assert_no_secret(repr(conn) + str(conn) + repr(vars(conn)))
    with pytest.raises(TypeError, match="not pickled"):
        pickle.dumps(conn)
    assert conn.scrub(f"key {API_KEY} id {KEY_ID} secret {KEY_SECRET}") == "key *** id *** secret ***"
    assert Secret("a") == Secret("a") and Secret("a") != Secret("b")


def test_retriever_repr_names_the_index_url_and_kind_of_auth_only():
    retriever = ElasticsearchRetriever("wiki", url="http://127.0.0.1:9", api_key=API_KEY, check=False)
    with retriever:
        assert repr(retriever) == (
            "ElasticsearchRetriever(index='wiki', url='http://127.0.0.1:9', auth='api key', fields=('title', 'txt'), "
            "tie_breaker=0.5)"
        )


def test_retriever_argument_checks():
    with pytest.raises(ValueError, match="index is empty"):
        ElasticsearchRetriever(" ", url="http://h", check=False)
    with pytest.raises(ValueError, match="both 'txt'"):
        ElasticsearchRetriever(url="http://h", title_field="txt", check=False)
    with pytest.raises(ValueError, match="tie_breaker=2"):
        ElasticsearchRetriever(url="http://h", tie_breaker=2, check=False)
    conn = ElasticsearchConnection.from_env("http://h", environ=CLEAN_ENV)
    with pytest.raises(ValueError, match="not both"):
        ElasticsearchRetriever(url="http://other", connection=conn, check=False)
    with ElasticsearchRetriever(url="http://h", check=False) as retriever:
        assert retriever.query_body("Eiffel tower", 3) == {
            "size": 3,
            "query": {
                "multi_match": {
                    "query": "Eiffel tower",
                    "type": "best_fields",
                    "fields": ["title", "txt"],
                    "tie_breaker": 0.5,
                }
            },
            "_source": ["title", "txt"],
            "track_total_hits": False,
        }
        with pytest.raises(ValueError, match="query is empty"):
            retriever.search("  ")
        with pytest.raises(ValueError, match="k=0"):
            retriever.search("x", k=0)
        with pytest.raises(TypeError, match="list of strings"):
            retriever.search_many("one query")
        assert retriever.search_many([]) == []


# ------------------------------------------------------------------------------------------- authentication (stub)
def es_error(status: int, kind: str, reason: str, **extra: str) -> dict:
    cause = {"type": kind, "reason": reason, **extra}
    return {"error": {"root_cause": [cause], **cause}, "status": status}


def unauthorized(method, path, headers, body):
    """What Elasticsearch 8 answers to a bad API key, details naming the key's id included."""
    detail = {"additional_unsuccessful_credentials": f"API key: unable to find apikey with id {KEY_ID}"}
    error = es_error(
        401,
        "security_exception",
        "unable to authenticate with provided credentials and anonymous access is not allowed for this request",
        **detail,
    )
    return 401, error, {"WWW-Authenticate": 'ApiKey, Basic realm="security", charset="UTF-8"'}


@pytest.fixture
def stub_401() -> Iterator[StubServer]:
    with StubServer(unauthorized) as server:
        yield server


def test_rejected_api_key_says_authentication_failed_without_the_key(stub_401, monkeypatch, caplog):
    monkeypatch.setenv("ELASTICSEARCH_API_KEY", API_KEY)
    caplog.set_level(logging.DEBUG)
    with pytest.raises(AuthenticationError) as err:
        ElasticsearchRetriever("wiki", url=stub_401.url)
    message = str(err.value)
    assert message.startswith(f"authentication failed: Elasticsearch at {stub_401.url} rejected the api key")
    assert "HTTP 401: unable to authenticate with provided credentials" in message
    assert "check the api key credentials from ELASTICSEARCH_API_KEY" in message
    assert err.value.__cause__ is None and err.value.__suppress_context__  # the client's error (full body) is dropped
    assert_no_secret(message)
    assert KEY_ID not in message  # the server's details name the key's id; they are left out
    assert_no_secret(caplog.text)
    assert stub_401.requests[0][2]["authorization"] == f"ApiKey {API_KEY}"  # the key was sent, as the client does


def test_rejected_password_and_missing_credentials(stub_401, caplog):
    caplog.set_level(logging.DEBUG)
    retriever = ElasticsearchRetriever(url=stub_401.url, username="elastic", password=PASSWORD, check=False)
    with retriever, pytest.raises(AuthenticationError) as err:
        retriever.search("who wrote hamlet")
    assert "rejected the basic (user elastic) credentials (search on index 'wiki')" in str(err.value)
    assert "from the api_key/username/password arguments" in str(err.value)
    assert_no_secret(str(err.value) + caplog.text)
    with ElasticsearchRetriever(url=stub_401.url, check=False) as anonymous, pytest.raises(AuthenticationError) as err:
        anonymous.search("x")
    assert "the cluster needs credentials: set ELASTICSEARCH_API_KEY, or ELASTICSEARCH_USERNAME" in str(err.value)


async def test_async_and_concurrent_searches_report_authentication_failures_too(stub_401):
    with ElasticsearchRetriever(url=stub_401.url, api_key=API_KEY, check=False) as retriever:
        with pytest.raises(AuthenticationError):
            await retriever.asearch("x")
        results = retriever.search_many(["a", "b"], return_exceptions=True)
        assert [type(r) for r in results] == [AuthenticationError, AuthenticationError]
        assert_no_secret(" ".join(str(r) for r in results))
        with pytest.raises(AuthenticationError):
            await retriever.asearch_many(["a", "b"])


def test_forbidden_says_which_privilege_is_missing():
    def forbidden(method, path, headers, body):
        return 403, es_error(403, "security_exception", "action [indices:data/read/search] is unauthorized"), {}

    with StubServer(forbidden) as server, ElasticsearchRetriever(url=server.url, api_key=API_KEY, check=False) as r:
        with pytest.raises(AuthenticationError) as err:
            r.search("x")
    assert "permission denied" in str(err.value) and "may not search on index 'wiki'" in str(err.value)
    assert "indices:data/read/search" in str(err.value)
    assert_no_secret(str(err.value))


def test_build_reports_authentication_failure_before_reading_the_corpus(stub_401, tmp_path):
    corpus = tmp_path / "c.jsonl"
    corpus.write_text('{"id": "1", "title": "t", "text": "x"}\n')
    conn = ElasticsearchConnection.from_env(stub_401.url, api_key=API_KEY, environ=CLEAN_ENV)
    with pytest.raises(AuthenticationError, match="check whether the index exists on index 'wiki'"):
        build_elasticsearch_index(corpus, connection=conn, progress=False)


# ---------------------------------------------------------------------------------------------- other stub answers
def test_a_hit_without_the_text_field_is_an_error_naming_document_and_field():
    def hits(method, path, headers, body):
        hit = {"_index": "wiki", "_id": "42", "_score": 1.0, "_source": {"title": "T", "body": "text"}}
        return 200, {"took": 1, "timed_out": False, "hits": {"hits": [hit]}}, {}

    with StubServer(hits) as server, ElasticsearchRetriever(url=server.url, check=False) as retriever:
        with pytest.raises(ElasticsearchBackendError) as err:
            retriever.search("x")
    assert "document '42' of index 'wiki'" in str(err.value) and "no text in field 'txt'" in str(err.value)


def test_a_server_that_is_not_elasticsearch_is_named():
    def teapot(method, path, headers, body):
        return 500, {"error": "something else"}, {}

    with StubServer(teapot) as server, ElasticsearchRetriever(url=server.url, check=False, max_retries=0) as r:
        with pytest.raises(ElasticsearchBackendError, match=f"at {server.url}"):
            r.search("x")


# --------------------------------------------------------------------------------------------- unreachable cluster
def test_refused_connection_names_the_url_and_fails_fast():
    url = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    started = time.monotonic()
    with pytest.raises(ClusterUnreachableError) as err:
        ElasticsearchRetriever(url=url, api_key=API_KEY, request_timeout=2.0)
    elapsed = time.monotonic() - started
    assert elapsed < 2.0, f"a refused connection took {elapsed:.1f} s"
    message = str(err.value)
    assert message.startswith(f"cannot reach Elasticsearch at {url} (read the mapping on index 'wiki'): connection ")
    assert "(3 retries)" in message and "ELASTICSEARCH_URL" in message and err.value.url == url
    assert isinstance(err.value, ConnectionError)  # callers can catch the builtin
    assert_no_secret(message)


@pytest.fixture
def silent_server() -> Iterator[str]:
    """A port that accepts connections (the kernel's backlog) but never answers: a hung or firewalled node."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(16)
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"


def test_a_silent_cluster_fails_within_the_timeout(silent_server):
    timeout = 0.5
    retriever = ElasticsearchRetriever(url=silent_server, request_timeout=timeout, check=False)
    with retriever:
        for call in (lambda: retriever.search("x"), lambda: retriever.search_many(["a", "b", "c"])):
            started = time.monotonic()
            with pytest.raises(ClusterUnreachableError) as err:
                call()
            elapsed = time.monotonic() - started
            assert timeout * 0.9 <= elapsed < timeout + 1.0, f"took {elapsed:.2f} s with request_timeout={timeout}"
            assert f"Elasticsearch at {silent_server} did not answer within request_timeout=0.5 s" in str(err.value)


def test_retrying_timeouts_is_opt_in_and_bounded(silent_server):
    conn = ElasticsearchConnection.from_env(
        silent_server, request_timeout=0.3, max_retries=2, retry_on_timeout=True, environ=CLEAN_ENV
    )
    with ElasticsearchRetriever(connection=conn, check=False) as retriever:
        started = time.monotonic()
        with pytest.raises(ClusterUnreachableError):
            retriever.search("x")
        elapsed = time.monotonic() - started
    assert 0.3 * 3 * 0.9 <= elapsed < 0.3 * 3 + 1.0  # three attempts of 0.3 s


# ------------------------------------------------------------------------------------------------------- the CLI
def test_cli_index_es_errors(tmp_path, capsys, monkeypatch):
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text('{"id": "1", "title": "t", "text": "x"}\n')
    url = f"http://127.0.0.1:{free_port()}"
    assert main(["index", str(corpus), "--es", url, "--index", "wiki", "-q"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"seakr: error: cannot reach Elasticsearch at {url}")
    assert main(["index", str(tmp_path / "missing.jsonl"), "--es", url, "-q"]) == 2
    assert "missing.jsonl does not exist" in capsys.readouterr().err  # checked before contacting the cluster
    assert main(["index", str(corpus), "--es", "-q"]) == 2  # --es without a URL and no ELASTICSEARCH_URL
    assert "no Elasticsearch URL" in capsys.readouterr().err
    assert main(["index", str(corpus), "--es", url, "--index", "Wiki", "-q"]) == 2
    assert "index name 'Wiki' must be lower case" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["index", str(corpus), "--es", url, "--out", str(tmp_path / "idx")])  # one target only
    assert "not allowed with argument" in capsys.readouterr().err
    monkeypatch.setenv("ELASTICSEARCH_URL", f"http://elastic:{PASSWORD}@127.0.0.1:{free_port()}")
    assert main(["index", str(corpus), "--es", "-q"]) == 2
    err = capsys.readouterr().err
    assert "cannot reach Elasticsearch at http://127.0.0.1:" in err
    assert_no_secret(err)
