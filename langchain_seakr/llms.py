"""``SeaKRLLM``: a LangChain text-completion model that also reports how sure the model is.

``invoke`` behaves like any LLM (the greedy text); ``generate`` exposes what SeaKR adds: for each prompt the greedy
continuation first, then the k samples, with the uncertainty computed from their hidden states in the greedy
generation's ``generation_info``.
"""

from __future__ import annotations

from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseLLM
from langchain_core.outputs import LLMResult
from pydantic import ConfigDict

from langchain_seakr._conversions import output_generations
from langchain_seakr._model import SelfAwareModelMixin

__all__ = ["SeaKRLLM"]


class SeaKRLLM(SelfAwareModelMixin, BaseLLM):
    """A self-aware completion model (Hugging Face or vLLM back-end) for LangChain.

    Example:
        ```python
        from langchain_seakr import SeaKRLLM

        llm = SeaKRLLM(model="smollm2-135m-instruct", k=10, max_tokens=32)
        result = llm.generate(["The capital of France is"])
        greedy, *samples = result.generations[0]
        print(greedy.text, greedy.generation_info["uncertainty"]["value"], len(samples))
        ```

    ``generation_info`` of the greedy generation holds ``uncertainty`` (value, estimator, layer, source, ...),
    ``logprobs`` (the greedy tokens and their log-probabilities), ``samples`` (the k texts), ``finish_reason`` and
    ``model_name``; each sample's holds its own ``logprobs``.  ``llm_output["token_usage"]`` counts every token
    generated, samples included.

    Each prompt is sent inside the model's chat template (``chat_template``, as LlamaIndex's ``SeaKRLLM`` and
    SeaKR's own prompts do): an instruct model given a bare prompt often closes its turn at once, an empty answer.
    """

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True, populate_by_name=True)

    @property
    def _llm_type(self) -> str:
        return "seakr"

    def prompt_text(self, prompt: str) -> str:
        """What the model reads for ``prompt``: the prompt in the chat template when ``chat_template`` asks for it.

        Raises:
            ValueError: ``chat_template=True`` but the model's tokenizer has no chat template.
        """
        return self.spec.prompt(prompt)

    def _generate(
        self,
        prompts: list[str],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> LLMResult:
        scored = self.scored_generate([self.prompt_text(p) for p in prompts], stop, **kwargs)
        model = self.answering_model
        generations = [output_generations(o, u, model) for o, u in scored]
        prompt_tokens = sum(len(o.prompt_token_ids) for o, _ in scored)
        completion = sum(len(o.greedy.token_ids) + sum(len(s.token_ids) for s in o.samples) for o, _ in scored)
        token_usage = {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion,
            "total_tokens": prompt_tokens + completion,
        }
        return LLMResult(generations=generations, llm_output={"token_usage": token_usage, "model_name": model})
