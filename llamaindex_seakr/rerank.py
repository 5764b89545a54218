"""``SelfAwareReranker``: order retrieved nodes by how sure the model is after reading each one.

SeaKR's re-ranking does not ask whether a passage looks relevant; it puts each passage in the model's context, lets
the model write, and keeps the passage after which the model is least uncertain.  This post-processor applies that
rule (``SeaKR.rerank``, the loop's own code) to any list of ``NodeWithScore``, so it drops into LlamaIndex query
engines next to or instead of the similarity-based re-rankers.
"""

from __future__ import annotations

from typing import Any

from llama_index.core.bridge.pydantic import ConfigDict, Field, PrivateAttr, field_validator
from llama_index.core.instrumentation import get_dispatcher
from llama_index.core.instrumentation.events.rerank import ReRankEndEvent, ReRankStartEvent
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.schema import NodeWithScore, QueryBundle

from llamaindex_seakr._seakr import ComponentLoop, SeaKRComponent, as_seakr_llm, checked_question
from llamaindex_seakr.llm import SeaKRLLM
from llamaindex_seakr.nodes import annotate, node_to_passage
from seakr_integrations.keywords import accepted_keywords, check_keywords
from seakr_integrations.reasoning.config import SETTING_NAMES, SeaKRConfig
from seakr_integrations.reasoning.decisions import CANDIDATE_METADATA_KEYS, CandidateScore
from seakr_integrations.setting_conflicts import SEARCH_SETTINGS, searches_nothing

__all__ = ["RERANK_METADATA_KEYS", "SelfAwareReranker"]

dispatcher = get_dispatcher(__name__)

RERANK_METADATA_KEYS = (*CANDIDATE_METADATA_KEYS, "retrieval_score")
"""Metadata keys the re-ranker adds (``CandidateScore.to_metadata()``'s, the same as LangChain's
``SelfAwareReranker``; and ``retrieval_score`` with ``keep_retrieval_score``)."""


class SelfAwareReranker(SeaKRComponent, BaseNodePostprocessor):
    """Re-rank nodes by the model's uncertainty after reading each one (SeaKR's self-aware re-ranking).

    Each node's text is put alone in the prompt (after the chosen context, in multi-hop mode: the next reasoning
    step is scored; single-hop mode: the answer written from the node is scored), all in one back-end batch.

    **Score**: ``score = -U``, the negated uncertainty of what the model wrote after reading the node, so that
    higher is better as LlamaIndex expects.  A node after which the model wrote nothing is unscorable: SeaKR ranks
    it last, and its score and ``seakr_uncertainty`` are ``None``; ties keep the retriever's order.  The metadata
    of each returned node (a copy) holds ``CandidateScore.to_metadata()`` (the same keys and values as LangChain's
    ``SelfAwareReranker`` gives): ``seakr_uncertainty`` (``U``), ``seakr_search_rank`` (1-based position in the
    input), ``seakr_chosen`` (the least uncertain), ``seakr_generation`` (what the model wrote), and, with
    ``keep_retrieval_score``, ``retrieval_score``.

    Emits ``ReRankStartEvent`` / ``ReRankEndEvent`` through ``get_dispatcher(__name__)`` like the built-in
    re-rankers.

    Args:
        llm: The self-aware model (``SeaKRLLM``, or a ``SelfAwareBackend``).
        top_n: How many nodes to return (>= 1).
        config: SeaKR's settings (``mode`` picks what is scored): the re-ranker samples as ``llm`` does, except
            where ``config`` changes a setting from its default (``SeaKRLLM.loop_config``).
        keep_retrieval_score: Keep the retriever's score in metadata as ``retrieval_score``.

    Raises:
        TypeError: ``llm`` is not self-aware, or an unknown keyword (the error names the nearest one).
        ValueError: ``top_n`` < 1 (pydantic ``ValidationError``).
    """

    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid")

    top_n: int = Field(default=3, description="Number of nodes to return, least uncertain first.")
    keep_retrieval_score: bool = Field(default=True, description="Keep the retriever's score in metadata.")
    llm: SeaKRLLM = Field(description="The self-aware model that reads the nodes.", exclude=True)

    _seakr_loop: ComponentLoop = PrivateAttr(default_factory=ComponentLoop)

    def __init__(
        self,
        llm: SeaKRLLM | Any,
        top_n: int = 3,
        config: SeaKRConfig | None = None,
        keep_retrieval_score: bool = True,
        **kwargs: Any,
    ) -> None:
        given = sorted(set(kwargs) & SEARCH_SETTINGS)
        if given:
            raise searches_nothing(
                "SelfAwareReranker (it re-ranks the nodes it is given)",
                given[0],
                "the component that searches (SeaKRQueryEngine, SeaKRWorkflow, UncertaintyGatedRetriever)",
            )
        check_keywords("SelfAwareReranker", kwargs, accepted_keywords(type(self)), config_settings=SETTING_NAMES)
        llm = as_seakr_llm(llm, "SelfAwareReranker")
        loop = ComponentLoop(config)  # no search: the re-ranker reads the nodes it is given
        super().__init__(llm=llm, top_n=top_n, keep_retrieval_score=keep_retrieval_score, **kwargs)
        self._seakr_loop = loop

    @field_validator("top_n", mode="before")
    @classmethod
    def _check_top_n(cls, value: int) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"top_n={value!r}: must be an integer >= 1 (how many nodes to keep)")
        return value

    @classmethod
    def class_name(cls) -> str:
        return "SelfAwareReranker"

    def _postprocess_nodes(
        self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None
    ) -> list[NodeWithScore]:
        dispatcher.event(
            ReRankStartEvent(query=query_bundle, nodes=nodes, top_n=self.top_n, model_name=self.llm.model_name)
        )
        if query_bundle is None:
            raise ValueError("SelfAwareReranker needs the query (query_bundle or query_str)")
        query = checked_question(
            query_bundle.query_str, "the query is empty: the re-ranker needs the question the nodes should answer"
        )
        if not nodes:
            dispatcher.event(ReRankEndEvent(nodes=[]))
            return []
        ranked = self.seakr.rerank(query, [node_to_passage(n) for n in nodes])
        out = []
        for candidate in ranked[: self.top_n]:
            original = nodes[candidate.rank - 1]
            score = CandidateScore.from_candidate(candidate)
            meta: dict[str, Any] = score.to_metadata()
            if self.keep_retrieval_score:
                meta["retrieval_score"] = original.score
            out.append(annotate(original, meta, score=score.relevance))
        dispatcher.event(ReRankEndEvent(nodes=out))
        return out
