"""Fixtures of the Elasticsearch tests (registered in ``conftest.py``): the server, a connection, unique test
indices that are deleted afterwards, and a small corpus indexed once per session.

The server is the cluster at ``ELASTICSEARCH_URL`` (credentials from the usual variables), or the noida-db emulator
that ``scripts/test.sh`` (or, for a direct pytest run, ``es_url`` here) starts on 127.0.0.1.  Test ids end in
``[noida-db-emulator]`` or ``[elasticsearch]`` to say which.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from es_server import EMULATOR_ENV, emulator_name, server_label, start_emulator

from seakr_integrations.retrieval import ElasticsearchRetriever, build_elasticsearch_index
from seakr_integrations.retrieval.es_connection import ElasticsearchConnection

CORPUS = [
    tuple(row.split(" | "))  # id | title | text
    for row in """
p01 | Eiffel Tower | The Eiffel Tower is a wrought-iron lattice tower on the Champ de Mars in Paris, France.
p02 | Louvre | The Louvre is the world's most-visited art museum, a historic landmark in Paris.
p03 | Mount Everest | Mount Everest is Earth's highest mountain above sea level, in the Himalayas.
p04 | Amazon River | The Amazon River in South America is the largest river by discharge volume of water.
p05 | Alan Turing | Alan Turing was an English mathematician who formalised computation with the Turing machine.
p06 | Ada Lovelace | Ada Lovelace was an English mathematician known for her work on the Analytical Engine.
p07 | Great Barrier Reef | The Great Barrier Reef is the largest coral reef system, off Queensland, Australia.
p08 | Photosynthesis | Photosynthesis is the process by which plants turn sunlight, water and carbon dioxide into sugar.
p09 | Marie Curie | Marie Curie was a Polish physicist and chemist who conducted pioneering research on radioactivity.
p10 | Python | Python is a high-level programming language whose design emphasises code readability.
p11 | Tokyo Tower | Tokyo Tower is a communications tower in Minato, Tokyo, inspired by the Eiffel Tower.
p12 | Blackpool Tower | Blackpool Tower is a tourist attraction in Blackpool, England, inspired by the Eiffel Tower.
p13 | Sahara | The Sahara is a desert in North Africa, the largest hot desert in the world.
p14 | Penicillin | Penicillin was discovered in 1928 by Alexander Fleming, a Scottish physician and microbiologist.
p15 | Hamlet | Hamlet is a tragedy written by William Shakespeare, set in Denmark.
p16 | Moon landing | Apollo 11 landed the first humans on the Moon in July 1969; Neil Armstrong stepped out first.
p17 | Great Wall of China | The Great Wall of China is a series of fortifications built across northern China.
p18 | Mozart | Wolfgang Amadeus Mozart was a prolific composer of the Classical period, born in Salzburg.
p19 | Titanic | RMS Titanic sank in the North Atlantic Ocean in April 1912 after striking an iceberg.
p20 | Mitochondrion | The mitochondrion is an organelle that generates most of the chemical energy of the cell.
p21 | Berlin Wall | The Berlin Wall divided Berlin from 1961 until it fell in November 1989.
p22 | Nile | The Nile is a major north-flowing river in northeastern Africa, flowing into the Mediterranean.
p23 | Mona Lisa | The Mona Lisa is a portrait painting by Leonardo da Vinci, kept in the Louvre in Paris.
p24 | Jupiter | Jupiter is the fifth planet from the Sun and the largest in the Solar System, a gas giant.
""".strip().splitlines()
]
LABEL = server_label()


@pytest.fixture(scope="session", params=[LABEL])
def es_url(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The server's URL; says which server it is (an emulator or a cluster), or skips saying why there is none."""
    plugins = request.config.pluginmanager
    reporter, capture = plugins.get_plugin("terminalreporter"), plugins.get_plugin("capturemanager")

    def say(text: str) -> None:  # on the terminal even while pytest captures the fixture's output
        if reporter is not None and capture is not None:
            with capture.global_and_fixture_disabled():
                reporter.write_line(f"\nElasticsearch tests: {text}")

    url = os.environ.get("ELASTICSEARCH_URL")
    if url:
        emulator = os.environ.get(EMULATOR_ENV)
        shown = ElasticsearchConnection.from_env(url).url
        say(f"the {emulator} EMULATOR at {shown} (not a real cluster)" if emulator else f"the cluster at {shown}")
        yield url
        return
    if request.param == "no-server":
        pytest.skip(
            "no Elasticsearch server: set ELASTICSEARCH_URL to a cluster (ES 8 or 9), or install the noida-db "
            "emulator (pip install noida-db, in the dev extra) and rerun (scripts/test.sh starts it)"
        )
    emulator = start_emulator(tmp_path_factory.mktemp("noida-db"))
    say(f"the {emulator_name()} EMULATOR at {emulator.url} (not a real cluster), started by the test session")
    try:
        yield emulator.url
    finally:
        emulator.stop()


@pytest.fixture(scope="session")
def connection(es_url: str) -> ElasticsearchConnection:
    return ElasticsearchConnection.from_env(es_url)


@pytest.fixture(scope="session")
def admin(connection: ElasticsearchConnection):
    """A plain client, for what the tests set up or inspect behind the back-end's back."""
    client = connection.client()
    yield client
    client.close()


@pytest.fixture
def new_index(admin) -> Iterator:
    """Makes unique ``seakr-test-...`` index names and deletes those indices afterwards."""
    made: list[str] = []

    def make(purpose: str) -> str:
        made.append(f"seakr-test-{purpose}-{uuid.uuid4().hex[:8]}")
        return made[-1]

    yield make
    for name in made:
        admin.indices.delete(index=name, ignore_unavailable=True)


@pytest.fixture
def corpus_file(tmp_path: Path) -> Path:
    path = tmp_path / "corpus.jsonl"
    path.write_text("".join(json.dumps({"id": i, "title": t, "text": x}) + "\n" for i, t, x in CORPUS))
    return path


@pytest.fixture(scope="session")
def wiki(es_url: str, connection: ElasticsearchConnection, admin) -> Iterator[str]:
    """One index of the whole corpus shared by the read-only tests (built through the public API)."""
    name = f"seakr-test-wiki-{uuid.uuid4().hex[:8]}"
    records = [{"id": i, "title": t, "text": x} for i, t, x in CORPUS]
    build_elasticsearch_index(records, name, connection=connection, replicas=0, progress=False)
    yield name
    admin.indices.delete(index=name, ignore_unavailable=True)


@pytest.fixture
def retriever(wiki: str, connection: ElasticsearchConnection) -> Iterator[ElasticsearchRetriever]:
    with ElasticsearchRetriever(wiki, connection=connection) as r:
        yield r
