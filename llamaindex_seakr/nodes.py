"""Translation between LlamaIndex nodes and SeaKR passages, both ways, and the metadata SeaKR adds to nodes.

The core loop speaks ``Passage`` (id, title, text, score); LlamaIndex speaks ``NodeWithScore``.  Converting at the
boundary (and remembering which node each passage came from) lets the loop run over any LlamaIndex retriever and
hand the user back the very nodes their retriever produced, while any core retriever (the embedded BM25 index)
serves LlamaIndex pipelines.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.schema import MetadataMode, NodeWithScore, QueryBundle, TextNode

from seakr_integrations.keywords import accepted_keywords, check_keywords
from seakr_integrations.retrieval.passage import Passage, Retriever
from seakr_integrations.uncertainty.estimate import Uncertainty

__all__ = [
    "NodeSearch",
    "PassageRetriever",
    "annotate",
    "as_llama_retriever",
    "checked_nodes",
    "explained_retrieval",
    "node_to_passage",
    "passage_to_node",
    "plain_uncertainty",
]

_TITLE_KEYS = ("title", "file_name", "document_title")


def node_to_passage(node: NodeWithScore) -> Passage:
    """The passage SeaKR shows the model for ``node``: its text without metadata (as SeaKR gives the LM passage
    text only), its id, a title from its metadata (``title``, else ``file_name``), its retrieval score."""
    inner = node.node
    metadata = inner.metadata or {}
    title = next((str(metadata[k]) for k in _TITLE_KEYS if metadata.get(k)), "")
    score = node.score if node.score is not None and math.isfinite(node.score) else 0.0
    return Passage(inner.node_id, title, inner.get_content(metadata_mode=MetadataMode.NONE), float(score))


def passage_to_node(passage: Passage) -> NodeWithScore:
    """A ``TextNode`` for a passage from a core retriever; the title goes to metadata (LlamaIndex shows it to the
    LLM when synthesising a response)."""
    metadata = {"title": passage.title} if passage.title else {}
    return NodeWithScore(node=TextNode(id_=passage.id, text=passage.text, metadata=metadata), score=passage.score)


def plain_uncertainty(u: Uncertainty | None) -> float | None:
    """The uncertainty's value for metadata: ``None`` when it is not finite (metadata is often stored as JSON)."""
    if u is None or not math.isfinite(u.value):
        return None
    return float(u.value)


def annotate(node: NodeWithScore, values: Mapping[str, Any], score: float | None | Any = ...) -> NodeWithScore:
    """A copy of ``node`` with ``values`` added to its metadata (and a new ``score`` if given).

    The node is copied because retrievers may hand out nodes they keep (an in-memory docstore), and one query's
    uncertainty must not leak into another's results.  The added keys are excluded from the text LlamaIndex
    shows the LLM and the embedder: they describe the node, they are not part of it.
    """
    inner = node.node.model_copy()
    inner.metadata = {**(node.node.metadata or {}), **values}
    new_keys = [k for k in values]
    inner.excluded_llm_metadata_keys = [
        *node.node.excluded_llm_metadata_keys,
        *(k for k in new_keys if k not in node.node.excluded_llm_metadata_keys),
    ]
    inner.excluded_embed_metadata_keys = [
        *node.node.excluded_embed_metadata_keys,
        *(k for k in new_keys if k not in node.node.excluded_embed_metadata_keys),
    ]
    return NodeWithScore(node=inner, score=node.score if score is ... else score)


@contextmanager
def explained_retrieval(name: str) -> Iterator[None]:
    """Around a LlamaIndex retriever's ``retrieve``/``aretrieve``: the errors LlamaIndex raises when ``_retrieve``
    returned strings or ``None`` become a ``TypeError`` that says what it must return."""
    try:
        yield
    except AttributeError as exc:  # LlamaIndex reads ``.node`` of each item _retrieve returned
        if exc.name != "node":
            raise
        got = type(exc.obj).__name__
        returned = "a string (or a list of strings)" if got == "str" else f"{got} objects"
        raise TypeError(
            f"the retriever {name} returned {returned} where NodeWithScore objects are expected: its "
            "_retrieve(query_bundle) must return a list of NodeWithScore (e.g. NodeWithScore(node=TextNode("
            "text=...), score=...)), an empty list when nothing matches"
        ) from None
    except TypeError as exc:  # LlamaIndex iterates what _retrieve returned before handing it back
        if "NoneType" not in str(exc):
            raise
        raise TypeError(
            f"the retriever {name} failed with TypeError ({exc}); if its _retrieve(query_bundle) returned None, it "
            "must return a list of NodeWithScore instead (an empty list when nothing matches)"
        ) from exc


def checked_nodes(name: str, nodes: Any) -> list[NodeWithScore]:
    """``nodes`` when it is a list of ``NodeWithScore``, else a ``TypeError`` saying what the retriever ``name``
    returned and what it must return."""
    if nodes is None or not isinstance(nodes, list):
        raise TypeError(f"the retriever {name} returned {type(nodes).__name__}: it must return a list of NodeWithScore")
    bad = [type(n).__name__ for n in nodes if not isinstance(n, NodeWithScore)]
    if bad:
        raise TypeError(f"the retriever {name} returned {bad[0]} objects instead of NodeWithScore")
    return nodes


class NodeSearch:
    """A LlamaIndex retriever seen as a core ``Retriever`` (``search(query, k) -> list[Passage]``).

    ``search_nodes`` also returns the nodes, so a caller can map the passages SeaKR chose back to them.

    Args:
        retriever: Any LlamaIndex retriever; its own top-k bounds what SeaKR can re-rank (set it to at least
            ``SeaKRConfig.n_candidates``).
    """

    def __init__(self, retriever: BaseRetriever) -> None:
        if not isinstance(retriever, BaseRetriever):
            raise TypeError(f"NodeSearch wraps a LlamaIndex BaseRetriever, got {type(retriever).__name__}")
        self.retriever = retriever

    def search_nodes(self, query: str, k: int = 3) -> list[tuple[Passage, NodeWithScore]]:
        """The at most ``k`` first nodes the retriever returns for ``query``, with their passages."""
        name = type(self.retriever).__name__
        with explained_retrieval(name):
            nodes = self.retriever.retrieve(QueryBundle(query))
        return [(node_to_passage(n), n) for n in checked_nodes(name, nodes)[:k]]

    def search(self, query: str, k: int = 3) -> list[Passage]:
        return [p for p, _ in self.search_nodes(query, k)]


class PassageRetriever(BaseRetriever):
    """Any core retriever (``BM25Index``, ``seakr_integrations.demo.demo_index()``, an Elasticsearch back-end) as a
    LlamaIndex retriever, so SeaKR's embedded index plugs into LlamaIndex query engines.

    Args:
        retriever: Anything with ``search(query, k) -> list[Passage]``.
        top_k: Passages per query.
        **kwargs: ``BaseRetriever``'s (``callback_manager``, ``verbose``...).

    Raises:
        TypeError: ``retriever`` has no ``search`` method.
        ValueError: ``top_k`` < 1.
    """

    def __init__(self, retriever: Retriever, top_k: int = 3, **kwargs: Any) -> None:
        check_keywords("PassageRetriever", kwargs, accepted_keywords(type(self)))
        if not callable(getattr(retriever, "search", None)):
            raise TypeError(
                f"PassageRetriever needs a search(query, k) method returning Passages, got {type(retriever).__name__}"
            )
        if not isinstance(top_k, int) or top_k < 1:
            raise ValueError(f"top_k={top_k!r}: must be an integer >= 1")
        super().__init__(**kwargs)
        self.search_backend = retriever
        self.top_k = top_k

    @classmethod
    def class_name(cls) -> str:
        return "PassageRetriever"

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        passages = self.search_backend.search(query_bundle.query_str, self.top_k)
        bad = [type(p).__name__ for p in passages if not isinstance(p, Passage)]
        if bad:
            raise TypeError(f"{type(self.search_backend).__name__}.search returned {bad[0]} objects, not Passages")
        return [passage_to_node(p) for p in passages]


def as_llama_retriever(retriever: Any, what: str) -> BaseRetriever:
    """``retriever`` as a LlamaIndex retriever: as is, or a core retriever wrapped in ``PassageRetriever``.

    Raises:
        TypeError: Neither (the message names ``what`` needed it).
    """
    if isinstance(retriever, BaseRetriever):
        return retriever
    if callable(getattr(retriever, "search", None)):
        return PassageRetriever(retriever)
    raise TypeError(
        f"{what} needs a LlamaIndex retriever (BaseRetriever, e.g. index.as_retriever()) or a SeaKR retriever "
        f"with search(query, k); got {type(retriever).__name__}"
    )
