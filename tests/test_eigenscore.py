"""EigenScore against values computed by hand from SPEC section 3."""

import math

import numpy as np
import pytest

from seakr_integrations.uncertainty.eigenscore import eigenscore


def test_two_opposite_vectors_hand_computed():
    # Rows [1, 0] and [0, 1] centre (over features) to [.5, -.5] and [-.5, .5]: G = [[.5, -.5], [-.5, .5]],
    # eigenvalues 1 and 0, so logdet(G + a I) = ln(1 + a) + ln(a).
    a = 1e-3
    assert eigenscore([[1.0, 0.0], [0.0, 1.0]], alpha=a) == pytest.approx((math.log(1 + a) + math.log(a)) / 2)


@pytest.mark.parametrize("k", [2, 5, 20])
def test_identical_samples_hit_the_floor_formula(k):
    # All rows equal with centred squared norm n2: G = n2 * ones(k, k) has eigenvalues k*n2 (once) and 0, so
    # U = ((k - 1) ln a + ln(k n2 + a)) / k exactly.
    v = np.array([3.0, -1.0, 2.0, 0.0])
    n2 = float(((v - v.mean()) ** 2).sum())
    a = 1e-3
    expected = ((k - 1) * math.log(a) + math.log(k * n2 + a)) / k
    assert eigenscore(np.tile(v, (k, 1)), alpha=a) == pytest.approx(expected, rel=1e-12)


def test_centring_is_per_vector_not_across_samples():
    # Adding a constant to every feature of one vector leaves its centred form unchanged.
    rng = np.random.default_rng(0)
    z = rng.normal(size=(6, 8))
    shifted = z + rng.normal(size=(6, 1)) * 10
    assert eigenscore(shifted) == pytest.approx(eigenscore(z), rel=1e-10)
    # Centring across samples instead would change the score: shifting all samples along one feature direction
    # changes the per-vector centred Gram matrix.
    assert eigenscore(z + np.arange(8)) != pytest.approx(eigenscore(z))


def test_diagonal_gram_hand_computed():
    # Orthogonal, already feature-centred rows: G = diag(|z_i|^2).
    z = np.array([[1.0, -1.0, 0.0, 0.0], [0.0, 0.0, 2.0, -2.0]])
    a = 1e-3
    assert eigenscore(z, alpha=a) == pytest.approx((math.log(2 + a) + math.log(8 + a)) / 2)


def test_more_diverse_samples_score_higher():
    rng = np.random.default_rng(1)
    base = rng.normal(size=64)
    consistent = base + 0.01 * rng.normal(size=(10, 64))
    diverse = base + 1.0 * rng.normal(size=(10, 64))
    assert eigenscore(diverse) > eigenscore(consistent)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_vector_scores_inf_without_raising(bad):
    z = np.ones((4, 3))
    z[2, 1] = bad
    assert eigenscore(z) == math.inf


def test_overflowing_gram_scores_inf():
    assert eigenscore(np.array([[1e200, -1e200], [-1e200, 1e200]])) == math.inf


@pytest.mark.parametrize(
    ("vectors", "message"),
    [(np.ones((1, 4)), "at least 2"), (np.ones(4), r"\(k, d\)"), (np.ones((2, 2, 2)), r"\(k, d\)")],
)
def test_bad_shapes_are_value_errors(vectors, message):
    with pytest.raises(ValueError, match=message):
        eigenscore(vectors)


def test_alpha_must_be_positive():
    with pytest.raises(ValueError, match="positive"):
        eigenscore(np.eye(3), alpha=0.0)
