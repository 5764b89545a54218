"""release_duplicate_vocab_weights on stand-ins for vLLM's CPU layers: what is freed, what is kept, and why.

The real engine is checked in test_vllm_backend.py (bytes freed, logits still HF's); these cover the cases a real
model of this suite cannot reach: a kernel that reads its weight, and a second installation."""

import torch

from seakr_integrations.backends.vllm_cpu_memory import release_duplicate_vocab_weights

VOCAB, HIDDEN = 64, 8
MATRIX_BYTES = VOCAB * HIDDEN * 4


class VocabParallelEmbedding(torch.nn.Module):
    """vLLM's embedding as its CPU method leaves it: the plain weight, and a packed kernel for a product."""

    def __init__(self, weight: torch.Tensor) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(weight, requires_grad=False)
        packed = weight.clone()
        self.cpu_linear = lambda x, _weight, bias: torch.nn.functional.linear(x, packed, bias)


class ParallelLMHead(VocabParallelEmbedding):
    pass


class Model(torch.nn.Module):
    def __init__(self, tied: bool = False, head_reads_weight: bool = False) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.embed_tokens = VocabParallelEmbedding(torch.randn(VOCAB, HIDDEN))
        self.lm_head = ParallelLMHead(torch.randn(VOCAB, HIDDEN))
        if tied:
            self.lm_head.weight = self.embed_tokens.weight
        if head_reads_weight:  # vLLM's fallback kernel: torch's linear on the weight it is passed
            self.lm_head.cpu_linear = torch.nn.functional.linear

    def logits(self, hidden: torch.Tensor) -> torch.Tensor:
        """As vLLM's logits processor computes them: the head's kernel, given the head's weight."""
        return self.lm_head.cpu_linear(hidden, self.lm_head.weight, None)


def test_untied_output_layer_frees_both_copies_and_its_logits_stay_the_same():
    model = Model()
    hidden = torch.randn(3, HIDDEN)
    before = model.logits(hidden)
    freed = release_duplicate_vocab_weights(model)
    assert freed == {"embedding_packed_bytes": MATRIX_BYTES, "output_plain_bytes": MATRIX_BYTES}
    assert model.lm_head.weight.numel() == 0 and "cpu_linear" not in vars(model.embed_tokens)
    torch.testing.assert_close(model.logits(hidden), before)
    assert model.embed_tokens.weight.shape == (VOCAB, HIDDEN)  # the lookup's weight stays


def test_a_kernel_that_reads_its_weight_keeps_the_weight():
    model = Model(head_reads_weight=True)
    freed = release_duplicate_vocab_weights(model)
    assert freed == {"embedding_packed_bytes": MATRIX_BYTES, "output_plain_bytes": 0}
    assert model.lm_head.weight.shape == (VOCAB, HIDDEN)
    model = Model()
    model.embed_tokens.cpu_linear = torch.nn.functional.linear  # vLLM's fallback: no copy of its own to free
    assert release_duplicate_vocab_weights(model)["embedding_packed_bytes"] == 0
    assert "cpu_linear" in vars(model.embed_tokens)


def test_an_output_layer_that_is_also_the_lookup_is_left_alone():
    model = Model()
    model.lm_head = model.embed_tokens  # its plain weight is the lookup's
    assert release_duplicate_vocab_weights(model) == {"embedding_packed_bytes": 0, "output_plain_bytes": 0}
    assert model.lm_head.weight.shape == (VOCAB, HIDDEN)


def test_tied_weights_keep_the_shared_matrix():
    model = Model(tied=True)
    freed = release_duplicate_vocab_weights(model)
    assert freed == {"embedding_packed_bytes": MATRIX_BYTES, "output_plain_bytes": 0}
    assert model.lm_head.weight is model.embed_tokens.weight and model.lm_head.weight.shape == (VOCAB, HIDDEN)


def test_a_second_installation_frees_nothing_more():
    model = Model()
    release_duplicate_vocab_weights(model)
    assert release_duplicate_vocab_weights(model) == {"embedding_packed_bytes": 0, "output_plain_bytes": 0}


def test_an_engine_that_reads_the_plain_head_keeps_it():
    """Speculative decoding compares heads by their weights; logits in another dtype run torch's linear on it."""
    from types import SimpleNamespace

    for engine in (
        SimpleNamespace(speculative_config=object(), model_config=SimpleNamespace(dtype="float32", head_dtype=None)),
        SimpleNamespace(speculative_config=None, model_config=SimpleNamespace(dtype="bfloat16", head_dtype="float32")),
    ):
        model = Model()
        assert release_duplicate_vocab_weights(model, engine) == {"embedding_packed_bytes": 0, "output_plain_bytes": 0}
    plain = SimpleNamespace(
        speculative_config=None, model_config=SimpleNamespace(dtype="float32", head_dtype="float32")
    )
    assert release_duplicate_vocab_weights(Model(), plain)["output_plain_bytes"] == MATRIX_BYTES


def test_a_model_without_an_output_layer_module_is_left_alone():
    model = torch.nn.Sequential(VocabParallelEmbedding(torch.randn(VOCAB, HIDDEN)))
    assert release_duplicate_vocab_weights(model) == {"embedding_packed_bytes": 0, "output_plain_bytes": 0}
    assert "cpu_linear" in vars(model[0])


def test_the_load_format_is_vllms_default_loader_and_cpu_engines_use_it():
    """vLLM finds seakr's load format once this module's worker side is imported; the loader reads files as vLLM's
    ``auto`` does, and every CPU engine seakr starts (in-process, served) names it."""
    from vllm.config.load import LoadConfig
    from vllm.model_executor.model_loader import get_model_loader
    from vllm.model_executor.model_loader.default_loader import DefaultModelLoader

    import seakr_integrations.backends.vllm_worker  # noqa: F401  (registers, as in a worker)
    from seakr_integrations.backends.vllm_settings import LOAD_FORMAT, cpu_engine_settings

    loader = get_model_loader(LoadConfig(load_format=LOAD_FORMAT))
    assert isinstance(loader, DefaultModelLoader) and loader.load_config.load_format == "auto"
    assert cpu_engine_settings(8192)["load_format"] == LOAD_FORMAT
