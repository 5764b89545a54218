"""Self-aware LM back-ends.  Import the concrete ones from their modules (they pull in torch / vLLM):
``seakr_integrations.backends.hf.HFBackend`` and ``seakr_integrations.backends.vllm.VLLMBackend``."""

from seakr_integrations.backends.base import SelfAwareBackend, eos_scoring_sequence

__all__ = ["SelfAwareBackend", "eos_scoring_sequence"]
