"""The Elasticsearch back-end against a server: index build, resume, ranking, the bad-index errors, the CLI, and the
adapters (LangChain ``SeaKRChain``, LlamaIndex ``SeaKRQueryEngine``, langchain-elasticsearch's own retriever).

The server is the cluster at ``ELASTICSEARCH_URL`` (credentials from the usual variables), or the noida-db emulator
that ``scripts/test.sh`` (or, for a direct pytest run, ``es_fixtures``) starts on 127.0.0.1.  Test ids end in
``[noida-db-emulator]`` or ``[elasticsearch]`` to say which, and the run prints it.  Nothing here relies on the
emulator: every index is created with a unique ``seakr-test-`` name and deleted afterwards, rankings are asserted
only where one passage alone matches the query's rare words, and each check is one a real ES 8 or 9 cluster must
pass unchanged.
"""

from __future__ import annotations

import json
import threading
import uuid

import pytest
from es_fixtures import CORPUS
from fakes import ScriptedBackend
from test_reasoner import CONFIG
from test_reasoner_components import eiffel as core_eiffel

from seakr_integrations.cli import main
from seakr_integrations.reasoning import SeaKR
from seakr_integrations.retrieval import (
    ElasticsearchRetriever,
    IncompleteIndexError,
    IndexNotFoundError,
    MappingError,
    Passage,
    build_elasticsearch_index,
)

pytest.importorskip(
    "elasticsearch", reason="the Elasticsearch back-end needs: pip install 'seakr-integrations[elasticsearch]'"
)

TEXTS = {pid: text for pid, _, text in CORPUS}
EIFFEL_QUESTION = "Which country is the Eiffel Tower in?"
pytestmark = pytest.mark.elasticsearch


# ---------------------------------------------------------------------------------------------------- the build
def test_build_creates_the_bm25_index_and_marks_it_complete(connection, admin, new_index, corpus_file):
    name = new_index("build")
    build = build_elasticsearch_index(corpus_file, name, connection=connection, replicas=0, progress=False)
    assert (build.added, build.already_indexed, build.num_docs, build.created) == (len(CORPUS), 0, len(CORPUS), True)
    assert build.index == name and build.url == connection.url
    mapping = admin.indices.get_mapping(index=name)[name]["mappings"]
    for field in ("title", "txt"):
        assert mapping["properties"][field] == {"type": "text", "analyzer": "standard", "similarity": "BM25"}
    assert mapping["_meta"]["seakr"]["complete"] is True and mapping["_meta"]["seakr"]["num_docs"] == len(CORPUS)
    assert mapping["_meta"]["seakr"]["source"] == str(corpus_file.resolve())
    settings = admin.indices.get_settings(index=name)[name]["settings"]["index"]
    assert settings.get("refresh_interval") in (None, "1s")  # bulk-load setting undone
    assert settings["number_of_replicas"] == "0" and settings["number_of_shards"] == "1"
    doc = admin.get(index=name, id="p05")
    assert doc["_source"] == {"title": "Alan Turing", "txt": CORPUS[4][2]}  # the passage id is the document id
    with ElasticsearchRetriever(name, connection=connection) as r:
        assert len(r) == len(CORPUS) and r.status.complete and r.status.indices == (name,)


def test_resume_after_an_interruption_completes_the_index_without_duplicates(connection, admin, new_index, corpus_file):
    name = new_index("resume")
    records = [{"id": i, "title": t, "text": x} for i, t, x in CORPUS]

    def interrupted():
        yield from records[:13]
        raise KeyboardInterrupt  # Ctrl-C while reading the 14th passage

    with pytest.raises(KeyboardInterrupt):
        build_elasticsearch_index(interrupted(), name, connection=connection, batch_size=4, progress=False)
    admin.indices.refresh(index=name)
    partial = admin.count(index=name)["count"]
    assert 0 < partial < len(CORPUS)  # whole bulk requests went in before the interruption
    with pytest.raises(IncompleteIndexError) as err:  # a half-built index is not searched by accident
        ElasticsearchRetriever(name, connection=connection)
    assert f"run `seakr index CORPUS.jsonl --es {connection.url} --index {name}` again" in str(err.value)
    with ElasticsearchRetriever(name, connection=connection, allow_incomplete=True) as r:
        assert len(r) == partial and not r.status.complete

    build = build_elasticsearch_index(corpus_file, name, connection=connection, batch_size=4, progress=False)
    assert (build.added, build.already_indexed, build.num_docs) == (len(CORPUS) - partial, partial, len(CORPUS))
    ids = [i for i, _, _ in CORPUS]
    found = admin.mget(index=name, ids=ids)["docs"]
    assert [d["_id"] for d in found if d["found"]] == ids
    with ElasticsearchRetriever(name, connection=connection) as r:
        assert len(r) == len(CORPUS) and r.status.complete
        hits = r.search("Alan Turing computation machine", k=10)
        assert [p.id for p in hits].count("p05") == 1

    again = build_elasticsearch_index(corpus_file, name, connection=connection, progress=False)  # nothing to do
    assert (again.added, again.already_indexed, again.num_docs, again.created) == (0, len(CORPUS), len(CORPUS), False)


def test_overwrite_replaces_changed_passages(connection, admin, new_index):
    name = new_index("overwrite")
    records = [{"id": i, "title": t, "text": x} for i, t, x in CORPUS[:5]]
    build_elasticsearch_index(records, name, connection=connection, replicas=0, progress=False)
    records[0] = {"id": "p01", "title": "Eiffel Tower", "text": "The Eiffel Tower was completed in 1889."}
    kept = build_elasticsearch_index(records, name, connection=connection, replicas=0, progress=False)
    assert (kept.added, kept.already_indexed) == (0, 5)
    assert "1889" not in admin.get(index=name, id="p01")["_source"]["txt"]  # default: existing passages kept
    replaced = build_elasticsearch_index(records, name, connection=connection, overwrite=True, progress=False)
    assert (replaced.added, replaced.already_indexed, replaced.num_docs) == (5, 0, 5)
    assert admin.get(index=name, id="p01")["_source"]["txt"] == "The Eiffel Tower was completed in 1889."


def test_a_bad_corpus_line_stops_the_build_naming_the_line(connection, admin, new_index, tmp_path):
    name = new_index("badline")
    path = tmp_path / "bad.jsonl"
    path.write_text('{"id": "a", "title": "A", "text": "first"}\n{"id": "b", "title": "B"}\n')
    with pytest.raises(ValueError, match=r"bad.jsonl, line 2: \"text\" is missing"):
        build_elasticsearch_index(path, name, connection=connection, progress=False)
    mapping = admin.indices.get_mapping(index=name)[name]["mappings"]
    assert mapping["_meta"]["seakr"]["complete"] is False


# ------------------------------------------------------------------------------------------------------- search
@pytest.mark.parametrize(
    ("query", "top"),
    [
        ("Who formalised computation with the Turing machine?", "p05"),
        ("largest coral reef system", "p07"),
        ("highest mountain in the Himalayas", "p03"),
        ("pioneering research on radioactivity", "p09"),
        ("Leonardo da Vinci portrait", "p23"),
        ("Who discovered penicillin?", "p14"),
        ("Mozart", "p18"),  # a title word
        ("iceberg 1912", "p19"),
    ],
)
def test_search_ranks_the_passage_that_matches_first(retriever, query, top):
    hits = retriever.search(query, k=3)
    assert hits[0].id == top
    assert 1 <= len(hits) <= 3 and all(isinstance(p, Passage) for p in hits)
    assert [p.score for p in hits] == sorted((p.score for p in hits), reverse=True) and hits[0].score > 0


def test_passages_map_id_title_text_and_score(retriever):
    (hit,) = retriever.search("Analytical Engine", k=1)
    assert (hit.id, hit.title, hit.text) == ("p06", "Ada Lovelace", CORPUS[5][2]) and hit.score > 0
    tower = {p.id for p in retriever.search("Eiffel Tower", k=3)}
    assert tower == {"p01", "p11", "p12"}  # only they mention it
    assert retriever.search("zzyzx qwxv", k=3) == []  # no passage shares a word
    # plain text: no query syntax (quotes, AND, groups and -negation are just words and separators)
    assert retriever.search('"Hamlet" AND (Shakespeare) -Denmark', k=1)[0].id == "p15"


def test_search_many_and_asearch_agree_with_search(retriever):
    queries = ["Berlin Wall fell", "gas giant planet", "Shakespeare tragedy"]
    one_by_one = [retriever.search(q, k=2) for q in queries]
    assert retriever.search_many(queries, k=2) == one_by_one
    import asyncio

    async def both():
        return await retriever.asearch(queries[0], k=2), await retriever.asearch_many(queries, k=2)

    single, many = asyncio.run(both())
    assert single == one_by_one[0] and many == one_by_one


def test_answer_many_over_elasticsearch_searches_from_several_threads(retriever, monkeypatch):
    threads: list[str] = []
    search = retriever.search

    def spy(query, k=3):
        threads.append(threading.current_thread().name)
        return search(query, k)

    monkeypatch.setattr(retriever, "search", spy)
    results = SeaKR(ScriptedBackend(eiffel), retriever, CONFIG).answer_many([EIFFEL_QUESTION, EIFFEL_QUESTION + " "])
    assert len(threads) == 2 and all(name.startswith("seakr-search") for name in threads)
    assert [r.answer for r in results] == ["France", "France"] and [r.passages[0].id for r in results] == ["p01"] * 2


# ------------------------------------------------------------------------------------------------ bad indices
def test_missing_index_says_which_and_how_to_build_it(connection):
    name = "seakr-test-missing-" + uuid.uuid4().hex[:8]
    with pytest.raises(IndexNotFoundError) as err:
        ElasticsearchRetriever(name, connection=connection)
    message = str(err.value)
    assert f"index {name!r} does not exist at {connection.url}" in message
    assert f"build it with `seakr index CORPUS.jsonl --es {connection.url} --index {name}`" in message
    with ElasticsearchRetriever(name, connection=connection, check=False) as unchecked:
        with pytest.raises(IndexNotFoundError, match=name):
            unchecked.search("x")
        assert isinstance(unchecked.search_many(["a", "b"], return_exceptions=True)[0], IndexNotFoundError)


def test_an_index_without_the_fields_is_refused_naming_them(connection, admin, new_index, corpus_file):
    name = new_index("mapping")
    admin.indices.create(
        index=name,
        mappings={"properties": {"title": {"type": "keyword"}, "body": {"type": "text"}}},
        settings={"number_of_replicas": 0},
    )
    with pytest.raises(MappingError) as err:
        ElasticsearchRetriever(name, connection=connection)
    message = str(err.value)
    assert f"index {name!r}" in message and "lacks the text field 'txt'" in message
    assert "title field 'title' is mapped as 'keyword'" in message and "(its fields: body, title)" in message
    with pytest.raises(MappingError, match="lacks the text field 'txt'"):  # the build refuses it too, adding nothing
        build_elasticsearch_index(corpus_file, name, connection=connection, progress=False)
    admin.indices.refresh(index=name)
    assert admin.count(index=name)["count"] == 0
    admin.index(index=name, id="x1", document={"title": "Kept", "body": "a passage in a body field"}, refresh=True)
    with ElasticsearchRetriever(name, connection=connection, title_field="body", text_field="body2", check=False) as r:
        with pytest.raises(MappingError, match="lacks the text field 'body2'"):
            r.verify()


def test_an_existing_index_with_other_field_names_is_searched_with_them(connection, admin, new_index):
    name = new_index("fields")
    admin.indices.create(
        index=name,
        mappings={"properties": {"heading": {"type": "text"}, "content": {"type": "text"}}},
        settings={"number_of_replicas": 0},
    )
    admin.index(index=name, id="d1", document={"heading": "Nile", "content": CORPUS[21][2]}, refresh=True)
    with ElasticsearchRetriever(name, connection=connection, title_field="heading", text_field="content") as r:
        assert r.status.seakr is None and r.status.complete  # not built by seakr: searched as it is
        assert r.search("river flowing into the Mediterranean") == [
            Passage("d1", "Nile", CORPUS[21][2], r.search("river flowing into the Mediterranean")[0].score)
        ]


# ---------------------------------------------------------------------------------------------------------- CLI
def test_cli_index_es_builds_and_resumes(es_url, connection, admin, new_index, corpus_file, capsys, monkeypatch):
    name = new_index("cli")
    assert main(["index", str(corpus_file), "--es", es_url, "--index", name, "--replicas", "0", "-q"]) == 0
    out = capsys.readouterr().out
    assert f"indexed {len(CORPUS)} passages into Elasticsearch index {name!r} at {connection.url}" in out
    assert f"({len(CORPUS)} new, 0 already indexed; the index holds {len(CORPUS)})" in out
    monkeypatch.setenv("ELASTICSEARCH_URL", es_url)  # --es without a URL reads it from the environment
    assert main(["index", str(corpus_file), "--es", "--index", name, "-q"]) == 0
    assert f"(0 new, {len(CORPUS)} already indexed" in capsys.readouterr().out
    assert admin.count(index=name)["count"] == len(CORPUS)
    assert main(["index", str(corpus_file), "--out", str(corpus_file.parent / "bm25"), "--index", name]) == 2
    assert "--index applies to Elasticsearch indexes (--es) only" in capsys.readouterr().err


def test_cli_ask_searches_elasticsearch(es_url, wiki, capsys, monkeypatch):
    monkeypatch.setattr("seakr_integrations.cli.backend.build_backend", lambda args: ScriptedBackend(eiffel))
    argv = [
        "ask",
        EIFFEL_QUESTION,
        "--es",
        es_url,
        "--es-index",
        wiki,
        "--model",
        "smollm2",
        "--backend",
        "hf",
        "-k",
        "4",
    ]
    argv += ["--exemplars", "0"]
    assert main([*argv, "--max-tokens", "10", "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    # the question's own search first: its results, best first, came from the cluster
    assert record["answer"] == "France" and [p["id"] for p in record["passages"]][0] == "p01"
    assert main(["ask", EIFFEL_QUESTION, "--es", es_url, "--es-index", "seakr-test-none"]) == 2
    assert "index 'seakr-test-none' does not exist" in capsys.readouterr().err


# ----------------------------------------------------------------------------------------------------- adapters
def eiffel(prompt, config):
    """The core tests' scripted scenario (``test_reasoner_components.eiffel``) over this corpus: a search for "Eiffel
    Tower stands" finds the three passages that mention it, and the one on the Champ de Mars (p01) plays the
    scenario's best passage, the one that leaves the model surest of its next step."""
    for pid, role in (("p01", "text of p2"), ("p11", "text of p1"), ("p12", "text of p3")):
        prompt = prompt.replace(TEXTS[pid], role)
    return core_eiffel(prompt, config)


def test_seakr_chain_takes_the_core_retriever_directly(retriever):
    from langchain_seakr import SeaKRChain

    chain = SeaKRChain(llm=ScriptedBackend(eiffel), retriever=retriever, config=CONFIG, return_trace=True)
    out = chain.invoke(EIFFEL_QUESTION)
    assert out["answer"] == "France" and [d.id for d in out["documents"]] == ["p01"]
    step = out["trace"]["steps"][0]
    assert step["query"] == "Eiffel Tower stands" and sorted(c["id"] for c in step["candidates"]) == [
        "p01",
        "p11",
        "p12",
    ]
    assert chain.batch([EIFFEL_QUESTION, EIFFEL_QUESTION]) and SeaKRChain(
        llm=ScriptedBackend(eiffel), retriever=retriever, config=CONFIG
    ).batch([EIFFEL_QUESTION] * 2) == ["France", "France"]


def test_seakr_query_engine_takes_the_core_retriever_directly(retriever):
    from llamaindex_seakr import SeaKRLLM, SeaKRQueryEngine

    llm = SeaKRLLM(backend=ScriptedBackend(eiffel), k=4, max_tokens=10)
    response = SeaKRQueryEngine(retriever, llm, CONFIG).query(EIFFEL_QUESTION)
    assert response.response == "France"
    assert [n.node.node_id for n in response.source_nodes] == ["p01"]
    assert response.source_nodes[0].node.text == CORPUS[0][2]


def test_langchain_elasticsearch_retriever_in_seakr_chain(wiki, connection):
    pytest.importorskip("langchain_elasticsearch", reason="pip install langchain-elasticsearch (dev extra)")
    from langchain_core.documents import Document
    from langchain_elasticsearch import ElasticsearchRetriever as LangChainESRetriever

    from langchain_seakr import SeaKRChain

    def body(query: str) -> dict:  # SeaKR's query, as ElasticsearchRetriever.query_body builds it
        return {
            "size": 3,
            "query": {
                "multi_match": {"query": query, "type": "best_fields", "fields": ["title", "txt"], "tie_breaker": 0.5}
            },
        }

    def to_document(hit: dict) -> Document:  # keep the passage id and title (the default mapper drops both)
        source = hit["_source"]
        return Document(source["txt"], id=hit["_id"], metadata={"title": source["title"], "score": hit["_score"]})

    client = connection.client()
    try:
        mapped = LangChainESRetriever(index_name=wiki, body_func=body, document_mapper=to_document, client=client)
        out = SeaKRChain(llm=ScriptedBackend(eiffel), retriever=mapped, config=CONFIG, return_trace=True).invoke(
            EIFFEL_QUESTION
        )
        assert out["answer"] == "France" and [d.id for d in out["documents"]] == ["p01"]
        assert out["documents"][0].metadata["title"] == "Eiffel Tower"
        plain = LangChainESRetriever(index_name=wiki, body_func=body, content_field="txt", client=client)
        out = SeaKRChain(llm=ScriptedBackend(eiffel), retriever=plain, config=CONFIG, return_trace=True).invoke(
            EIFFEL_QUESTION
        )
        assert out["answer"] == "France" and out["documents"][0].page_content == CORPUS[0][2]
    finally:
        client.close()
