"""SeaKR for LangChain: self-aware LLM and chat model, an uncertainty-gated retriever, a self-aware re-ranker and
the full SeaKR loop as a Runnable (``SeaKRChain``), and a middleware for LangChain v1 agents (``SeaKRMiddleware``,
with the gate as a tool: ``seakr_gate_tool``).  The algorithm lives in ``seakr_integrations``; this package
only translates types and wires callbacks."""

from langchain_seakr.agent_gate import AgentGate
from langchain_seakr.agent_loop import AgentLoop
from langchain_seakr.agent_state import SeaKRAgentState
from langchain_seakr.chains import SeaKRChain
from langchain_seakr.chat_models import ChatSeaKR
from langchain_seakr.compressors import SelfAwareReranker
from langchain_seakr.embeddings import MiniLMEmbeddings
from langchain_seakr.gate_tool import seakr_gate_tool
from langchain_seakr.llms import SeaKRLLM
from langchain_seakr.middleware import SeaKRMiddleware
from langchain_seakr.retrievers import GateDecision, PassageIndexRetriever, UncertaintyGatedRetriever
from seakr_integrations import __version__
from seakr_integrations.reasoning.config import SeaKRConfig

__all__ = [
    "AgentGate",
    "AgentLoop",
    "ChatSeaKR",
    "GateDecision",
    "MiniLMEmbeddings",
    "PassageIndexRetriever",
    "SeaKRChain",
    "SeaKRConfig",
    "SeaKRAgentState",
    "SeaKRLLM",
    "SeaKRMiddleware",
    "SelfAwareReranker",
    "UncertaintyGatedRetriever",
    "__version__",
    "seakr_gate_tool",
]
