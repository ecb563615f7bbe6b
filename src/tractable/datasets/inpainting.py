"""Binary image inpainting models with dense, partly repulsive pairwise terms (Lampert 2012, Sec. 4.2).

The paper's inpainting experiment uses the HECC energies (Nowozin et al. 2011): binary images of
5,000-18,000 pixels with one unary and up to 64 pairwise factors per pixel, many of them repulsive,
so that the energy is far from submodular. Those energies are not available here, so
:func:`inpainting` builds models of the same kind from real binary images:

* **Images.** The handwritten digits bundled with scikit-learn (``sklearn.datasets.load_digits``,
  8x8, 17 grey levels; nothing is downloaded) are upscaled to 28x28 (bilinear), thresholded at half
  intensity and padded to 32x32 cells. The default image tiles ``3 x 4`` such digits (96x128 =
  12,288 pixels), drawn by ``rng`` from the first 1000 digits.
* **Pairwise terms, learned.** One coupling ``J_o`` per offset ``o = (dr, dc)`` within a radius:
  all offsets of the largest full rings ``dr^2 + dc^2 <= R^2`` that give at most ``n_neighbors``
  neighbours per pixel (64 -> ``R^2 = 18``, 60 neighbours). The couplings are learned, once, by
  maximum pseudo-likelihood (Besag 1975) of the homogeneous model
  ``score(x) = h sum_p x_p + sum_o J_o sum_p [x_p == x_{p+o}]`` on 200 digit images that are never
  used as test images (digits 1000-1796): the conditional log-odds of a pixel is
  ``h + sum_o J_o sum_{q = p +- o} (2 x_q - 1)``, a logistic regression (scikit-learn,
  ``C = 10``). Near offsets come out attractive (``J_o > 0``); offsets at about a stroke width
  come out repulsive (``J_o < 0``), because a pixel on a stroke of typical width tends to disagree
  with the pixels that far away once the nearer ones are known: the pairwise terms are
  non-submodular, as in HECC. ``repulsive=False`` clips the negative couplings to 0 (a submodular
  variant for comparison). Each pairwise factor is a 2x2 ``TableFactor`` ``[[J_o, 0], [0, J_o]]``.
* **Scale.** Pseudo-likelihood over-estimates the couplings of so dense a model for joint sampling:
  with the learned values as they are, Gibbs sampling of a 64x80 problem (noise 0.1) erases the
  strokes (foreground density of the decoding 6%, truth 28%). The couplings and the bias are
  therefore multiplied by ``coupling_scale`` (default 0.5: decoding density 26%, observed pixels
  restored to 1% error, about half of the occluded pixels left uncertain, ``|P(x = 1) - 1/2| < 0.4``,
  against 7% of the observed ones).
* **Unary terms.** Every pixel has one unary ``TableFactor`` with the learned bias ``[0, h]``; an
  observed pixel adds its evidence ``log p(observed | x)`` for an observation corrupted by flips
  with probability ``noise`` (the observation is drawn that way from the true image). Occluded
  pixels (``mask``) get no evidence.
* **Occlusion.** Random axis-aligned rectangles (each side 1/4 to 2/5 of the image's) are added
  until at least the fraction ``occlusion`` of the pixels is hidden.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from .._validate import check_int, check_positive, check_rng
from ..factorgraph import FactorGraph, TableFactor

__all__ = ["Inpainting", "inpainting"]

#: side of the square cell of one upscaled digit, and of the digit inside it
_CELL, _INNER = 32, 28
#: digits 0..999 give test images; digits 1000..1796 (every 4th: 200 images) train the couplings
_N_TEST_DIGITS = 1000
_TRAIN_STEP = 4
#: inverse regularization of the pseudo-likelihood fit
_PL_C = 10.0


@dataclass(frozen=True)
class Inpainting:
    """A binary inpainting problem.

    Attributes
    ----------
    factor_graph : FactorGraph
        ``H * W`` binary variables, pixel ``(r, c)`` is variable ``r * W + c``; factors ``0..H*W-1``
        are the unary ones (in pixel order), the pairwise ones follow.
    image : ndarray (H, W), uint8, read-only
        The true image.
    mask : ndarray (H, W), bool, read-only
        ``True`` where the pixel is occluded (no evidence).
    observed : ndarray (H, W), uint8, read-only
        The noisy observation (flips with probability ``noise``); 0 where occluded.
    shape : tuple of int
        ``(H, W)``.
    offsets : ndarray (K, 2), int64, read-only
        The pairwise offsets ``(dr, dc)`` (one per pair of opposite neighbours).
    couplings : ndarray (K,), read-only
        ``J_o`` per offset as used in the model (scaled by ``coupling_scale``; clipped at 0 when
        ``repulsive=False``).
    bias : float
        The unary bias ``h`` (score of a pixel being 1), scaled as the couplings.
    noise : float
        The flip probability of the observation.
    """

    factor_graph: FactorGraph
    image: np.ndarray
    mask: np.ndarray
    observed: np.ndarray
    shape: tuple
    offsets: np.ndarray
    couplings: np.ndarray
    bias: float
    noise: float

    @property
    def n_pixels(self) -> int:
        """Number of pixels (variables)."""
        return int(self.shape[0] * self.shape[1])


def _frozen(a: np.ndarray, dtype=None) -> np.ndarray:
    a = np.array(a, dtype=dtype)
    a.flags.writeable = False
    return a


@functools.lru_cache(maxsize=1)
def _digit_cells() -> np.ndarray:
    """All 1797 scikit-learn digits as binary 32x32 cells, uint8, shape (1797, 32, 32)."""
    from scipy.ndimage import zoom
    from sklearn.datasets import load_digits

    images = load_digits().images
    big = zoom(images, (1, _INNER / 8, _INNER / 8), order=1)
    pad = (_CELL - _INNER) // 2
    cells = np.zeros((len(images), _CELL, _CELL), dtype=np.uint8)
    cells[:, pad : pad + _INNER, pad : pad + _INNER] = big > 8.0
    cells.flags.writeable = False
    return cells


def _offsets(n_neighbors: int) -> np.ndarray:
    """Half-plane offsets of the largest full rings with at most ``n_neighbors`` neighbours, by distance."""
    r = int(np.ceil(np.sqrt(n_neighbors))) + 1
    cand = [(dr, dc) for dr in range(0, r + 1) for dc in range(-r, r + 1) if dr > 0 or dc > 0]
    cand.sort(key=lambda o: (o[0] ** 2 + o[1] ** 2, o[0], o[1]))
    d2 = np.array([dr * dr + dc * dc for dr, dc in cand])
    keep = 0
    for ring in np.unique(d2):
        count = int(np.sum(d2 <= ring))
        if 2 * count > n_neighbors:
            break
        keep = count
    return np.array(cand[:keep], dtype=np.int64).reshape(-1, 2)


def _shift(x: np.ndarray, dr: int, dc: int) -> np.ndarray:
    """``out[..., r, c] = x[..., r + dr, c + dc]`` with 0 (background) outside."""
    out = np.zeros_like(x)
    H, W = x.shape[-2:]
    rs, re = max(0, -dr), min(H, H - dr)
    cs, ce = max(0, -dc), min(W, W - dc)
    out[..., rs:re, cs:ce] = x[..., rs + dr : re + dr, cs + dc : ce + dc]
    return out


@functools.lru_cache(maxsize=8)
def _learned_couplings(n_neighbors: int) -> tuple[np.ndarray, np.ndarray, float]:
    """Offsets, pseudo-likelihood couplings ``J_o`` and bias ``h`` learned from the training digits."""
    from sklearn.linear_model import LogisticRegression

    offsets = _offsets(n_neighbors)
    train = _digit_cells()[_N_TEST_DIGITS::_TRAIN_STEP].astype(np.float64)
    # feature of offset o: sum over q = p + o, p - o of the spin 2 x_q - 1; outside an image is background (-1)
    feats = np.empty((train.size, len(offsets)))
    for k, (dr, dc) in enumerate(offsets):
        feats[:, k] = (2.0 * (_shift(train, dr, dc) + _shift(train, -dr, -dc)) - 2.0).ravel()
    clf = LogisticRegression(C=_PL_C, max_iter=2000, tol=1e-8)
    clf.fit(feats, train.ravel().astype(np.int64))
    J = _frozen(clf.coef_[0], np.float64)
    return _frozen(offsets), J, float(clf.intercept_[0])


def _default_image(size: tuple[int, int], rng: np.random.Generator) -> np.ndarray:
    H, W = size
    rows, cols = -(-H // _CELL), -(-W // _CELL)
    cells = _digit_cells()
    picks = rng.choice(_N_TEST_DIGITS, size=rows * cols, replace=False)
    canvas = np.zeros((rows * _CELL, cols * _CELL), dtype=np.uint8)
    for k, idx in enumerate(picks):
        r, c = divmod(k, cols)
        canvas[r * _CELL : (r + 1) * _CELL, c * _CELL : (c + 1) * _CELL] = cells[idx]
    return canvas[:H, :W]


def _occlusion_mask(shape: tuple[int, int], fraction: float, rng: np.random.Generator) -> np.ndarray:
    H, W = shape
    mask = np.zeros(shape, dtype=bool)
    if fraction == 0.0:
        return mask
    for _ in range(1000):
        if mask.mean() >= fraction:
            break
        h = int(rng.integers(max(1, H // 4), max(2, (2 * H) // 5 + 1)))
        w = int(rng.integers(max(1, W // 4), max(2, (2 * W) // 5 + 1)))
        r = int(rng.integers(0, H - h + 1))
        c = int(rng.integers(0, W - w + 1))
        mask[r : r + h, c : c + w] = True
    return mask


def _check_image(image) -> np.ndarray:
    img = np.asarray(image)
    if img.dtype.kind not in "biuf":  # complex, object, str: never cast silently
        raise TypeError(f"`image` must be a binary array of 0/1 (or booleans); got dtype {img.dtype}.")
    if img.ndim != 2 or min(img.shape) < 2:
        raise ValueError(f"`image` must be a 2-D binary array of at least 2x2 pixels; got shape {img.shape}.")
    if not np.isin(img, (0, 1)).all():
        raise ValueError("`image` must contain only 0 and 1 (or booleans).")
    return img.astype(np.uint8)


def inpainting(
    image=None,
    *,
    size: tuple[int, int] | None = None,
    occlusion: float = 0.25,
    n_neighbors: int = 64,
    repulsive: bool = True,
    noise: float = 0.1,
    coupling_scale: float = 0.5,
    rng=None,
) -> Inpainting:
    """A binary inpainting model: noisy evidence, occluded rectangles, dense learned pairwise terms.

    The construction (digit images, pseudo-likelihood couplings per offset, evidence, occlusion) is
    described in the module docstring.

    Parameters
    ----------
    image : array_like (H, W) of 0/1, optional
        The true image; by default ``3 x 4`` upscaled scikit-learn digits drawn by ``rng``.
    size : (int, int), optional
        ``(H, W)`` of the default image (default ``(96, 128)``: 12,288 pixels; the paper's images have
        4,992-17,856). Only with ``image=None``.
    occlusion : float in [0, 1), default 0.25
        Fraction of pixels hidden by random rectangles (at least this much).
    n_neighbors : int in [2, 128], default 64
        Largest number of pairwise factors per pixel: all offsets of the largest full rings that fit
        (64 gives 60 neighbours, radius sqrt(18)).
    repulsive : bool, default True
        Keep the repulsive (negative) couplings; ``False`` clips them to 0.
    noise : float in (0, 1/2), default 0.1
        Flip probability of the observed pixels (the evidence is ``log(1 - noise)`` for the observed
        value and ``log(noise)`` for the other).
    coupling_scale : float > 0, default 0.5
        Factor applied to the learned couplings and bias (see the module docstring).
    rng : None, int or numpy.random.Generator
        Draws the digits, the occlusion and the noise; the same seed gives the same problem.

    Returns
    -------
    Inpainting
        ``factor_graph``, ``image``, ``mask``, ``observed``, ``shape``, ``offsets``, ``couplings``,
        ``bias``, ``noise``.

    Examples
    --------
    >>> from tractable.datasets.inpainting import inpainting
    >>> prob = inpainting(size=(32, 40), n_neighbors=24, rng=0)
    >>> prob.shape, prob.factor_graph.n_variables, prob.image.dtype.name
    ((32, 40), 1280, 'uint8')
    >>> bool((prob.couplings < 0).any())
    True
    """
    if image is not None and size is not None:
        raise ValueError("`size` applies only to the default image; got both `image` and `size`.")
    if not isinstance(occlusion, (int, float)) or isinstance(occlusion, bool) or not 0.0 <= occlusion < 1.0:
        raise ValueError(f"`occlusion` must be a fraction in [0, 1); got {occlusion!r}.")
    n_neighbors = check_int(n_neighbors, "n_neighbors", minimum=2, maximum=128)
    noise = check_positive(noise, "noise")
    coupling_scale = check_positive(coupling_scale, "coupling_scale")
    if not noise < 0.5:
        raise ValueError(f"`noise` must be in (0, 1/2); got {noise}.")
    if not isinstance(repulsive, (bool, np.bool_)):
        raise TypeError(f"`repulsive` must be a bool; got {repulsive!r}.")
    rng = check_rng(rng)
    if image is None:
        if size is None:
            size = (96, 128)
        try:
            H, W = size
        except (TypeError, ValueError) as err:
            raise ValueError(f"`size` must be a pair (H, W); got {size!r}.") from err
        H, W = check_int(H, "size[0]", minimum=2), check_int(W, "size[1]", minimum=2)
        img = _default_image((H, W), rng)
    else:
        img = _check_image(image)
    H, W = img.shape
    mask = _occlusion_mask((H, W), float(occlusion), rng)
    flips = rng.random((H, W)) < noise
    observed = np.where(mask, 0, img ^ flips).astype(np.uint8)

    offsets, J, h = _learned_couplings(n_neighbors)
    J, h = coupling_scale * J, coupling_scale * h
    if not repulsive:
        J = np.maximum(J, 0.0)

    fg = FactorGraph([2] * (H * W))
    log_keep, log_flip = np.log1p(-noise), np.log(noise)
    evidence = np.where(observed[..., None] == np.arange(2), log_keep, log_flip)  # (H, W, 2)
    unary = np.zeros((H, W, 2))
    unary[..., 1] = h
    unary[~mask] += evidence[~mask]
    for p, table in enumerate(unary.reshape(-1, 2)):
        fg.add_factor(TableFactor([p], table))
    index = np.arange(H * W).reshape(H, W)
    for (dr, dc), j in zip(offsets.tolist(), J.tolist()):  # dr >= 0: pixel (r, c) pairs with (r + dr, c + dc)
        if j == 0.0 or dr >= H or abs(dc) >= W:
            continue
        table = np.array([[j, 0.0], [0.0, j]])
        c0, c1 = max(0, -dc), W - max(0, dc)
        src = index[: H - dr, c0:c1].ravel().tolist()
        dst = index[dr:, c0 + dc : c1 + dc].ravel().tolist()
        for u, v in zip(src, dst):
            fg.add_factor(TableFactor([u, v], table))
    return Inpainting(
        factor_graph=fg,
        image=_frozen(img, np.uint8),
        mask=_frozen(mask, bool),
        observed=_frozen(observed, np.uint8),
        shape=(int(H), int(W)),
        offsets=offsets,
        couplings=_frozen(J, np.float64),
        bias=float(h),
        noise=noise,
    )
