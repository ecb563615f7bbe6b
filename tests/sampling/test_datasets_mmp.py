"""The data sets of the adaptive-MMP experiments (Lampert 2012, Sec. 4): yeast and the inpainting models (the yeast
CRF is tested in tests/crf/test_multilabel.py)."""

import numpy as np
import pytest

from tractable import TableFactor
from tractable.datasets.inpainting import Inpainting, inpainting
from tractable.datasets.yeast import YEAST_N_TRAIN, load_yeast, yeast_split


# ----------------------------------------------------------------------------- yeast data
def test_load_yeast_shapes_and_read_only():
    X, Y = load_yeast()
    assert X.shape == (2417, 103) and X.dtype == np.float64
    assert Y.shape == (2417, 14) and Y.dtype == np.uint8
    assert set(np.unique(Y)) == {0, 1}
    assert abs(Y.sum(axis=1).mean() - 4.237) < 1e-3  # MULAN's label cardinality
    with pytest.raises(ValueError):
        X[0, 0] = 1.0
    with pytest.raises(ValueError):
        Y[0, 0] = 1


def test_yeast_split_is_the_papers():
    X_train, X_test, Y_train, Y_test = yeast_split()
    assert YEAST_N_TRAIN == 1500
    assert X_train.shape == (1500, 103) and Y_train.shape == (1500, 14)
    assert X_test.shape == (917, 103) and Y_test.shape == (917, 14)
    X, _ = load_yeast()
    np.testing.assert_array_equal(np.concatenate([X_train, X_test]), X)


# ----------------------------------------------------------------------------- inpainting
def test_inpainting_shapes_and_factors(seed):
    prob = inpainting(size=(40, 48), occlusion=0.3, n_neighbors=24, rng=seed)
    assert isinstance(prob, Inpainting)
    H, W = prob.shape
    assert (H, W) == (40, 48) and prob.n_pixels == H * W
    fg = prob.factor_graph
    assert fg.n_variables == H * W and np.all(fg.cardinalities == 2)
    assert prob.image.shape == prob.mask.shape == prob.observed.shape == (H, W)
    assert prob.image.dtype == np.uint8 and prob.mask.dtype == bool
    assert prob.mask.mean() >= 0.3
    assert np.all(prob.observed[prob.mask] == 0)
    assert len(prob.offsets) == 12  # full rings up to r^2 = 8 give 24 neighbours
    factors = fg.factors
    unary, pairwise = factors[: H * W], factors[H * W :]
    assert all(len(f.variables) == 1 and f.variables[0] == p for p, f in enumerate(unary))
    assert all(isinstance(f, TableFactor) and f.log_table.shape == (2, 2) for f in pairwise)
    degree = np.bincount(np.concatenate([f.variables for f in pairwise]), minlength=H * W)
    assert degree.max() <= 24 and degree.reshape(H, W)[10:-10, 10:-10].min() == 24
    # occluded pixels carry the prior bias only; observed ones their evidence too
    bias_only = np.array([0.0, prob.bias])
    occluded = np.flatnonzero(prob.mask.ravel())
    seen = np.flatnonzero(~prob.mask.ravel())
    assert all(np.allclose(unary[p].log_table, bias_only) for p in occluded[:50])
    assert not any(np.allclose(unary[p].log_table, bias_only) for p in seen[:50])
    for f in (unary[0], pairwise[0], pairwise[-1]):
        with pytest.raises(ValueError):
            f.log_table[0] = 1.0
    with pytest.raises(ValueError):
        prob.image[0, 0] = 1


def test_inpainting_scores_finite_and_repulsive_couplings(seed):
    prob = inpainting(size=(32, 32), n_neighbors=64, rng=seed)
    fg = prob.factor_graph
    assert all(np.isfinite(f.log_table).all() for f in fg.factors)
    assert np.isfinite(fg.score(prob.image.ravel()))
    assert np.isfinite(fg.score(np.zeros(fg.n_variables, dtype=np.int64)))
    J = prob.couplings
    assert len(J) == 30 and (J < 0).sum() >= 5 and (J > 0).sum() >= 5
    assert J[:2].min() > 0.5  # nearest neighbours attract strongly
    doubled = inpainting(size=(32, 32), n_neighbors=64, coupling_scale=1.0, rng=seed)
    np.testing.assert_allclose(doubled.couplings, 2.0 * J)
    assert doubled.bias == pytest.approx(2.0 * prob.bias)
    repulsive = [f for f in fg.factors[fg.n_variables :] if f.log_table[0, 0] < 0]
    assert repulsive and all(f.log_table[0, 1] == 0 for f in repulsive)
    # the true image scores higher than its noisy observation and than the blank image
    assert fg.score(prob.image.ravel()) > fg.score(np.zeros(fg.n_variables, dtype=np.int64))
    submodular = inpainting(size=(32, 32), n_neighbors=64, repulsive=False, rng=seed)
    assert submodular.couplings.min() >= 0.0
    assert all(f.log_table[0, 0] > 0 for f in submodular.factor_graph.factors[fg.n_variables :])


def test_inpainting_default_size_is_in_the_papers_range():
    prob = inpainting(n_neighbors=4, rng=0)
    assert 5_000 <= prob.n_pixels <= 18_000
    assert 0.1 < prob.image.mean() < 0.5


def test_inpainting_deterministic_with_seed(seed):
    a = inpainting(size=(24, 30), n_neighbors=8, rng=seed)
    b = inpainting(size=(24, 30), n_neighbors=8, rng=seed)
    c = inpainting(size=(24, 30), n_neighbors=8, rng=seed + 1)
    np.testing.assert_array_equal(a.image, b.image)
    np.testing.assert_array_equal(a.mask, b.mask)
    np.testing.assert_array_equal(a.observed, b.observed)
    for fa, fb in zip(a.factor_graph.factors, b.factor_graph.factors):
        np.testing.assert_array_equal(fa.variables, fb.variables)
        np.testing.assert_array_equal(fa.log_table, fb.log_table)
    assert not (np.array_equal(a.image, c.image) and np.array_equal(a.mask, c.mask))


def test_inpainting_given_image():
    img = np.zeros((20, 25), dtype=bool)
    img[5:15, 8:12] = True
    prob = inpainting(img, occlusion=0.0, n_neighbors=8, rng=1)
    assert prob.shape == (20, 25) and not prob.mask.any()
    np.testing.assert_array_equal(prob.image, img.astype(np.uint8))
    with pytest.raises(ValueError, match="size"):
        inpainting(img, size=(20, 25))
    with pytest.raises(ValueError, match="only 0 and 1"):
        inpainting(np.full((4, 4), 2))
    with pytest.raises(ValueError, match="occlusion"):
        inpainting(img, occlusion=1.0)
    with pytest.raises(ValueError, match="noise"):
        inpainting(img, noise=0.5)
    with pytest.raises(ValueError, match="coupling_scale"):
        inpainting(img, coupling_scale=0.0)
