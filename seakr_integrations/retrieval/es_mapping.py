"""The Elasticsearch index SeaKR searches (SeaKR's and DRAGIN's layout: index ``wiki``, ``title`` and ``txt`` text
fields): its BM25 mapping, index names, and the check that an index fits (its build state: docs/design/core.md)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from seakr_integrations.retrieval.es_connection import ElasticsearchConnection
from seakr_integrations.retrieval.es_errors import IncompleteIndexError, IndexNotFoundError, MappingError, how_to_build

if TYPE_CHECKING:
    from elasticsearch import Elasticsearch

DEFAULT_INDEX = "wiki"
DEFAULT_TITLE_FIELD = "title"
DEFAULT_TEXT_FIELD = "txt"
META_KEY = "seakr"
"""Key under the mapping's ``_meta`` where seakr keeps an index's build state."""
FORMAT_VERSION = 1

_INVALID_NAME_CHARS = set('\\/*?"<>| ,#:')


@dataclass(frozen=True)
class IndexStatus:
    """What :func:`index_status` found: the concrete indices behind the name, their size and seakr's build state.

    Attributes:
        name: The name asked for (an index, an alias, or a pattern).
        indices: The concrete indices it resolves to.
        num_docs: Documents in them (as of the last refresh).
        seakr: The ``_meta.seakr`` build state when seakr built the index, else ``None``.
    """

    name: str
    indices: tuple[str, ...]
    num_docs: int
    seakr: Mapping[str, Any] | None

    @property
    def complete(self) -> bool:
        """False only for a seakr build that has not finished (interrupted or still running)."""
        return self.seakr is None or bool(self.seakr.get("complete"))


def mapping_body(
    title_field: str = DEFAULT_TITLE_FIELD, text_field: str = DEFAULT_TEXT_FIELD, *, shards: int = 1
) -> dict[str, Any]:
    """The settings and mappings of a new index (``indices.create`` keyword arguments): standard analyzer and BM25
    stated explicitly, ``dynamic: strict``, no replicas or refresh while bulk-loading, ``_meta.seakr.complete`` false.
    """
    text = {"type": "text", "analyzer": "standard", "similarity": "BM25"}
    return {
        "settings": {"index": {"number_of_shards": shards, "number_of_replicas": 0, "refresh_interval": "-1"}},
        "mappings": {
            "dynamic": "strict",
            "_meta": {
                META_KEY: {
                    "format_version": FORMAT_VERSION,
                    "complete": False,
                    "title_field": title_field,
                    "text_field": text_field,
                }
            },
            "properties": {title_field: dict(text), text_field: dict(text)},
        },
    }


def check_index_name(name: str) -> str:
    """Return ``name`` if Elasticsearch allows it for a new index; a ``ValueError`` says which rule it breaks."""
    if not isinstance(name, str) or not name:
        raise ValueError("the index name is empty: pass --index NAME (SeaKR's default is 'wiki')")
    bad = sorted(_INVALID_NAME_CHARS.intersection(name))
    for broken, problem in (
        (name != name.lower(), "must be lower case"),
        (name[0] in "-_+", "must not start with '-', '_' or '+'"),
        (name in (".", ".."), "must not be '.' or '..'"),
        (bad, f"must not contain {' '.join(repr(c) for c in bad)}"),
        (len(name.encode("utf-8")) > 255, "must be at most 255 bytes long"),
    ):
        if broken:
            raise ValueError(f"index name {name!r} {problem} (Elasticsearch's rules for index names)")
    return name


def _field_types(properties: Mapping[str, Any], prefix: str = "") -> dict[str, str]:
    """``{dotted path: type}`` of a mapping's fields, objects walked into (object fields have type ``object``)."""
    types: dict[str, str] = {}
    for name, spec in properties.items():
        if not isinstance(spec, Mapping):
            continue
        path = prefix + name
        types[path] = str(spec.get("type", "object"))
        if isinstance(spec.get("properties"), Mapping):
            types.update(_field_types(spec["properties"], path + "."))
    return types


def _check_fields(index: str, mappings: Mapping[str, Any], fields: dict[str, str], url: str) -> None:
    types = _field_types(mappings.get("properties") or {})
    missing = [f"{role} field {name!r}" for role, name in fields.items() if name not in types]
    wrong = [
        f"{role} field {name!r} is mapped as {types[name]!r}"
        for role, name in fields.items()
        if name in types and types[name] != "text"
    ]
    if not missing and not wrong:
        return
    has = ", ".join(sorted(t for t in types if types[t] != "object")) or "no fields"
    problems = [f"lacks the {' and the '.join(missing)}"] if missing else []
    if wrong:
        problems.append("; ".join(wrong) + " (SeaKR's BM25 search needs type 'text')")
    raise MappingError(
        f"Elasticsearch index {index!r} at {url} {'; '.join(problems)} (its fields: {has}); point title_field/"
        f"text_field (--title-field/--text-field) at its text fields, or build a new index with "
        f"{how_to_build(url, 'NEW_NAME')}",
        url,
    )


def index_status(
    client: Elasticsearch, connection: ElasticsearchConnection, name: str, title_field: str, text_field: str
) -> IndexStatus:
    """Check that ``name`` exists and every index behind it maps both fields as text; count its documents.

    Raises:
        IndexNotFoundError: No such index (the message says how to build it).
        MappingError: A field is missing or not text (named in the message).
        ClusterUnreachableError, AuthenticationError: See :class:`ElasticsearchConnection`.
    """
    with connection.errors("read the mapping", name):
        mappings = client.indices.get_mapping(index=name).body
    if not mappings:  # a pattern that matches nothing
        raise IndexNotFoundError(
            f"no Elasticsearch index matches {name!r} at {connection.url}; build one with "
            f"{how_to_build(connection.url, name)}",
            connection.url,
        )
    fields = {"title": title_field, "text": text_field}
    seakr: Mapping[str, Any] | None = None
    for concrete, body in sorted(mappings.items()):
        mapping = body.get("mappings") or {}
        _check_fields(concrete, mapping, fields, connection.url)
        meta = (mapping.get("_meta") or {}).get(META_KEY)
        if isinstance(meta, Mapping) and (seakr is None or not meta.get("complete")):
            seakr = meta
    with connection.errors("count documents", name):
        num_docs = int(client.count(index=name)["count"])
    return IndexStatus(name, tuple(sorted(mappings)), num_docs, seakr)


def require_complete(status: IndexStatus, url: str) -> None:
    """Raise :class:`IncompleteIndexError` for a seakr build that has not finished."""
    if not status.complete:
        raise IncompleteIndexError(
            f"Elasticsearch index {status.name!r} at {url} is incomplete: a `seakr index` build into it was "
            f"interrupted or is still running ({status.num_docs} passages so far); run "
            f"{how_to_build(url, status.name)} again with the same corpus to complete it (passages already indexed "
            "are skipped), or pass allow_incomplete=True to search it as it is",
            url,
        )
