"""SeaKR for LangChain: self-aware LLM and chat model, an uncertainty-gated retriever, a self-aware re-ranker and
the full SeaKR loop as a Runnable (``SeaKRChain``).  The algorithm lives in ``seakr_integrations``; this package
only translates types and wires callbacks."""

from langchain_seakr.chains import SeaKRChain
from langchain_seakr.chat_models import ChatSeaKR
from langchain_seakr.compressors import SelfAwareReranker
from langchain_seakr.embeddings import MiniLMEmbeddings
from langchain_seakr.llms import SeaKRLLM
from langchain_seakr.retrievers import GateDecision, PassageIndexRetriever, UncertaintyGatedRetriever
from seakr_integrations import __version__
from seakr_integrations.reasoning.config import SeaKRConfig

__all__ = [
    "ChatSeaKR",
    "GateDecision",
    "MiniLMEmbeddings",
    "PassageIndexRetriever",
    "SeaKRChain",
    "SeaKRConfig",
    "SeaKRLLM",
    "SelfAwareReranker",
    "UncertaintyGatedRetriever",
    "__version__",
]
