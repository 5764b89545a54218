"""Type translation between the SeaKR core and LangChain: outputs to generations, passages to documents.

Every adapter class in this package goes through these functions, so a record looks the same whether it came from
``SeaKRLLM``, ``ChatSeaKR``, a callback run of ``SeaKRChain`` or a re-ranker's metadata.
"""

from __future__ import annotations

import hashlib
from typing import Any

from langchain_core.documents import Document
from langchain_core.outputs import Generation

from seakr_integrations.outputs import SelfAwareOutput
from seakr_integrations.retrieval.passage import Passage
from seakr_integrations.uncertainty.estimate import Uncertainty

__all__ = [
    "document_id",
    "generation_info",
    "output_generations",
    "to_passage",
    "uncertainty_info",
    "usage",
]


def uncertainty_info(u: Uncertainty) -> dict[str, Any]:
    """The uncertainty as JSON-safe metadata (the core's ``Uncertainty.to_metadata``, as LlamaIndex gets it)."""
    return u.to_metadata()


def usage(output: SelfAwareOutput) -> dict[str, int]:
    """Token counts of one self-aware call: the prompt, and every generated token (greedy plus the k samples,
    since all of them were computed)."""
    generated = len(output.greedy.token_ids) + sum(len(s.token_ids) for s in output.samples)
    return {
        "input_tokens": len(output.prompt_token_ids),
        "output_tokens": generated,
        "total_tokens": len(output.prompt_token_ids) + generated,
    }


def generation_info(output: SelfAwareOutput, u: Uncertainty, model_name: str) -> dict[str, Any]:
    """What a LangChain generation carries besides its text: the uncertainty, the greedy token log-probabilities,
    the k samples' texts and why generation stopped."""
    return {
        "model_name": model_name,
        "finish_reason": output.greedy.finish_reason,
        "stop_reason": output.greedy.stop_reason,
        "uncertainty": uncertainty_info(u),
        "logprobs": {"token_ids": list(output.greedy.token_ids), "token_logprobs": list(output.greedy.logprobs)},
        "samples": [s.text for s in output.samples],
        "greedy_tokens": len(output.greedy.token_ids),
    }


def output_generations(output: SelfAwareOutput, u: Uncertainty, model_name: str) -> list[Generation]:
    """The greedy continuation first (it carries the uncertainty), then the k samples."""
    greedy = Generation(text=output.greedy.text, generation_info=generation_info(output, u, model_name))
    samples = [
        Generation(
            text=s.text,
            generation_info={
                "sample": i,
                "finish_reason": s.finish_reason,
                "logprobs": {"token_ids": list(s.token_ids), "token_logprobs": list(s.logprobs)},
            },
        )
        for i, s in enumerate(output.samples)
    ]
    return [greedy, *samples]


def document_id(doc: Document) -> str:
    """A stable id for a document: its ``id``, else ``metadata["id"]``, else a hash of its text."""
    if doc.id:
        return str(doc.id)
    if doc.metadata.get("id") is not None:
        return str(doc.metadata["id"])
    return "sha1:" + hashlib.sha1(doc.page_content.encode("utf-8")).hexdigest()[:16]


def to_passage(doc: Document, rank: int) -> Passage:
    """A LangChain document as the core's passage; the search score comes from ``metadata["score"]`` (or
    ``relevance_score``) when the retriever set one, else it decreases with the rank."""
    if not isinstance(doc, Document):
        raise TypeError(f"the retriever returned a {type(doc).__name__}; a LangChain retriever must return Documents")
    score = doc.metadata.get("score", doc.metadata.get("relevance_score"))
    try:
        score = float(score) if score is not None else -float(rank)
    except (TypeError, ValueError):
        score = -float(rank)
    title = doc.metadata.get("title")
    return Passage(document_id(doc), str(title) if title is not None else "", doc.page_content, score)


def llm_token_usage(output: SelfAwareOutput) -> dict[str, int]:
    """``usage`` under the keys an ``LLMResult.llm_output["token_usage"]`` carries in LangChain."""
    used = usage(output)
    return {
        "prompt_tokens": used["input_tokens"],
        "completion_tokens": used["output_tokens"],
        "total_tokens": used["total_tokens"],
    }
