"""Finite inputs at the edges of float64, and the other hostile-input fixes of round 2.

- scores of magnitude up to 1e308 give finite, correct answers (or a ``ValueError`` naming the
  arguments when the answer itself, ``log Z``, lies beyond float64's range) in ``bp.tree_marginals``,
  ``bp.tree_marginals_batch``, ``bp.tree_map``, ``bp.loopy`` and ``sampling.gibbs`` / ``adaptive_mmp``;
  never NaN with a success status;
- ``HLMRF.fix`` refuses one variable given two different values;
- ``.npz`` / ``.npy`` headers that declare more data than the file holds are refused before NumPy
  allocates (``tractable.io._npz``).

Oracles: the chains below reward agreement with a huge score ``R`` on every edge, so every labelling
that is not constant has probability ``exp(-R) = 0`` in float64 and the exact marginals are the
softmax over the label ``l`` of ``sum_i unary[i, l]`` (the constant labellings), by hand.
"""

from __future__ import annotations

import io
import re
import zipfile

import numpy as np
import pytest

from tractable import FactorGraph, TableFactor, bp, sampling
from tractable.hlmrf import HLMRF
from tractable.io._npz import check_npy, check_npz, read_npy, read_npz


def _agreeing_chain(n: int, k: int, reward: float, rng: int = 0):
    gen = np.random.default_rng(rng)
    unary = gen.normal(size=(n, k))
    edges = np.array([[i, i + 1] for i in range(n - 1)])
    pairwise = np.tile(np.where(np.eye(k, dtype=bool), reward, 0.0), (n - 1, 1, 1))
    totals = unary.sum(axis=0)
    p = np.exp(totals - totals.max())
    return unary, edges, pairwise, p / p.sum()


# ----------------------------------------------------------------------------- bp.tree_*


@pytest.mark.parametrize("reward", [1e15, 1e200, 1e305, 3e307])
def test_tree_marginals_with_huge_agreement_rewards_are_exact(reward):
    unary, edges, pairwise, want = _agreeing_chain(6, 3, reward)
    res = bp.tree_marginals(unary, edges, pairwise)
    assert res.status == "optimal" and np.all(np.isfinite(res.marginals)) and np.isfinite(res.log_partition)
    # 1e-12: message passing in log space on O(1) scores after the huge ones cancel exactly
    np.testing.assert_allclose(res.marginals, np.tile(want, (6, 1)), rtol=1e-12, atol=1e-15)
    assert res.log_partition == pytest.approx(5 * reward, rel=1e-15)
    batch = bp.tree_marginals_batch(np.stack([unary, unary]), [edges, edges], [pairwise, pairwise])
    np.testing.assert_allclose(batch.marginals[1], res.marginals, rtol=1e-12, atol=1e-15)
    mp = bp.tree_map(unary, edges, pairwise)
    assert mp.assignment.tolist() == [int(np.argmax(want))] * 6 and np.isfinite(mp.score)


def test_tree_marginals_of_scores_near_1e308_are_finite():
    unary = np.array([[1e308, -1e308], [0.0, 0.0], [-1e308, 0.0]])
    pairwise = np.array([[[0.0, -1e308], [-1e308, 0.0]], [[0.0, 1.0], [1.0, 0.0]]])
    res = bp.tree_marginals(unary, [[0, 1], [1, 2]], pairwise)
    # by hand: y0 = 0 (its unary), then y1 = 0 (the edge), and y2 = 1 (its unary); log Z = 1e308 + 1
    np.testing.assert_array_equal(res.marginals, [[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    assert res.status == "optimal" and res.log_partition == 1e308
    assert bp.tree_map(unary, [[0, 1], [1, 2]], pairwise).assignment.tolist() == [0, 0, 1]


def test_tree_refuses_a_log_partition_beyond_float64():
    unary, edges, pairwise, _ = _agreeing_chain(4, 2, 1e308)  # log Z = 3e308
    msg = "`unary` and `pairwise` must keep the log partition function within float64's range"
    with pytest.raises(ValueError, match=re.escape(msg)):
        bp.tree_marginals(unary, edges, pairwise)
    with pytest.raises(ValueError, match=re.escape("`unary` and `pairwise` must give the best labelling a score")):
        bp.tree_map(unary, edges, pairwise)


def test_tree_refuses_scores_too_far_apart_to_form_any_labelling():
    unary = np.array([[1e308, -1e308], [-1e308, 1e308]])  # each node's two labels 2e308 apart
    pairwise = np.array([[[1e308, -1e308], [-1e308, 1e308]]])
    with pytest.raises(ValueError, match=re.escape("`unary` and `pairwise` must hold finite scores within")):
        bp.tree_marginals(unary, [[0, 1]], pairwise)


def test_ordinary_scores_are_not_shifted():
    """Below the threshold the kernel runs on the scores as given (bit for bit the earlier results)."""
    from tractable.bp.tree import _needs_shift

    unary, edges, pairwise, _ = _agreeing_chain(5, 3, 50.0)
    assert not _needs_shift(unary, pairwise)
    assert _needs_shift(unary, np.full_like(pairwise, 1e300))


# ----------------------------------------------------------------------------- bp.loopy


def _graph(unary, edges, pairwise) -> FactorGraph:
    fg = FactorGraph([unary.shape[1]] * unary.shape[0])
    for i, row in enumerate(unary):
        fg.add_factor(TableFactor([i], row))
    for (u, v), table in zip(edges, pairwise):
        fg.add_factor(TableFactor([int(u), int(v)], table))
    return fg


def test_loopy_with_huge_rewards_is_exact_on_a_tree():
    unary, edges, pairwise, want = _agreeing_chain(5, 3, 1e305)
    res = bp.loopy(_graph(unary, edges, pairwise))
    assert res.converged and np.isfinite(res.log_partition)
    np.testing.assert_allclose(res.marginals, np.tile(want, (5, 1)), rtol=1e-12, atol=1e-15)


def test_loopy_refuses_a_log_partition_beyond_float64():
    unary, edges, pairwise, _ = _agreeing_chain(4, 2, 1e308)
    with pytest.raises(ValueError, match=re.escape("`fg` must keep the log partition function")):
        bp.loopy(_graph(unary, edges, pairwise))


# ----------------------------------------------------------------------------- sampling


def _binary_near_1e308() -> FactorGraph:
    """x0 = 0 surely (unary 0 vs -1e308); x1 = x0 surely (-1e308 for disagreeing, 1e308 apart from agreeing
    in the coupling ``w``: ``T[1,1] - T[1,0] - T[0,1] + T[0,0]`` = 2e308 overflows); x2 free, field 0.3."""
    fg = FactorGraph([2, 2, 2])
    fg.add_factor(TableFactor([0], [0.0, -1e308]))
    fg.add_factor(TableFactor([0, 1], [[0.0, -1e308], [-1e308, 0.0]]))
    fg.add_factor(TableFactor([2], [0.0, 0.3]))
    return fg


def test_gibbs_with_scores_near_1e308_gives_exact_rao_blackwell_marginals():
    """Before: the coupling overflowed (1e308 + 1e308 = inf, then inf * 0 = NaN): NaN marginals."""
    res = sampling.gibbs(_binary_near_1e308(), n_sweeps=50, rng=0)
    assert res.status == "completed" and np.all(np.isfinite(res.marginals))
    p2 = 1.0 / (1.0 + np.exp(-0.3))
    # x0 and x1 are certain; x2's conditional never changes, so its Rao-Blackwell estimate is exact (the
    # scaled field loses bits below 2**-1074: rtol 1e-9 is ample)
    np.testing.assert_allclose(res.marginals, [[1.0, 0.0], [1.0, 0.0], [1 - p2, p2]], rtol=1e-9, atol=0)


@pytest.mark.filterwarnings("ignore::tractable.ConvergenceWarning")
def test_adaptive_mmp_with_scores_near_1e308_decides():
    res = sampling.adaptive_mmp(_binary_near_1e308(), rng=0)
    assert res.assignment.tolist()[:2] == [0, 0] and np.all(np.isfinite(res.marginals))


def test_gibbs_scaling_is_exact_where_no_overflow_can_happen():
    from tractable.sampling._wiring import compile_binary

    fg = FactorGraph([2, 2])
    fg.add_factor(TableFactor([0, 1], [[1.0, -2.0], [0.5, 3.0]]))
    assert compile_binary(fg).scale_exp == 0
    assert compile_binary(_binary_near_1e308()).scale_exp > 0


# ----------------------------------------------------------------------------- HLMRF.fix


def test_fix_refuses_two_values_for_one_variable():
    model = HLMRF(4)
    model.fix([1, 3], [0.25, 1.0])
    msg = "`variables` lists variable 2 twice with different `values`: 0.2 and 0.7; fix each variable at one value."
    with pytest.raises(ValueError, match=re.escape(msg)):
        model.fix([2, 0, 2], [0.2, 0.5, 0.7])
    variables, values = model.fixed  # nothing of the refused call was kept
    assert variables.tolist() == [1, 3] and values.tolist() == [0.25, 1.0]
    model.fix([0, 0], [0.5, 0.5])  # the same value twice is fine
    model.fix(3, 0.0)  # and a later call replaces a value
    assert model.fixed[1].tolist() == [0.5, 0.25, 0.0]


# ----------------------------------------------------------------------------- .npz / .npy headers


def _npy_bytes(shape, descr="<f8", data=b"") -> bytes:
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(header, {"descr": descr, "fortran_order": False, "shape": shape})
    return header.getvalue() + data


def _npz(path, members: dict[str, bytes], compression=zipfile.ZIP_STORED):
    with zipfile.ZipFile(path, "w", compression=compression) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return path


def test_npz_declaring_1e12_floats_is_refused_before_allocating(tmp_path):
    path = _npz(tmp_path / "big.npz", {"phi.npy": _npy_bytes((10**12,), data=bytes(64))})
    msg = (
        f"`path` is not a readable .npz file: {path} (member 'phi.npy' declares shape (1000000000000,) of float64 "
        "(8 TB) but holds only 64 bytes of data: truncated or crafted)."
    )
    for reader in (check_npz, read_npz):
        with pytest.raises(ValueError, match=re.escape(msg)):
            reader(path)
    (tmp_path / "big.npy").write_bytes(_npy_bytes((10**6, 10**6), data=bytes(8)))
    with pytest.raises(ValueError, match=re.escape(f"`path` is not a readable .npy file: {tmp_path / 'big.npy'}")):
        read_npy(tmp_path / "big.npy")


def test_npz_that_inflates_past_the_limit_is_refused(tmp_path):
    zeros = np.zeros(1_000_000)
    buf = io.BytesIO()
    np.lib.format.write_array(buf, zeros)
    path = _npz(tmp_path / "bomb.npz", {"a.npy": buf.getvalue()}, zipfile.ZIP_DEFLATED)
    assert path.stat().st_size < 20_000  # 8 MB of zeros in a few kB
    with pytest.raises(ValueError, match=r"member 'a\.npy' inflates to 8 MB: .* more than the 1 MB allowed"):
        read_npz(path, max_bytes=10**6)
    assert read_npz(path)["a"].shape == (1_000_000,)


@pytest.mark.parametrize(
    "members, reason",
    [
        ({"a.npy": _npy_bytes((2,), "|O", b"\x80\x04N.")}, "member 'a.npy' holds Python objects (a pickle)"),
        ({"a.txt": b"hello"}, "member 'a.txt' is not an .npy array with a valid header"),
        ({"a.npy": _npy_bytes((3,), "<f8", bytes(8))}, "member 'a.npy' declares shape (3,) of float64 (24 bytes)"),
    ],
    ids=["pickle", "not-npy", "truncated"],
)
def test_npz_members_that_are_refused(tmp_path, members, reason):
    path = _npz(tmp_path / "x.npz", members)
    with pytest.raises(ValueError, match=re.escape(f"`path` is not a readable .npz file: {path} ({reason}")):
        read_npz(path)


def test_npz_and_npy_that_are_fine_load(tmp_path):
    np.savez(tmp_path / "ok.npz", a=np.arange(5), b=np.eye(2))
    np.savez_compressed(tmp_path / "okc.npz", a=np.arange(5))
    arrays = read_npz(tmp_path / "ok.npz")
    assert arrays["a"].tolist() == [0, 1, 2, 3, 4] and arrays["b"].shape == (2, 2)
    assert read_npz(tmp_path / "okc.npz")["a"].tolist() == [0, 1, 2, 3, 4]
    assert check_npz(tmp_path / "ok.npz") == ["a", "b"]
    np.save(tmp_path / "ok.npy", np.arange(3.0))
    check_npy(tmp_path / "ok.npy")
    assert read_npy(tmp_path / "ok.npy").tolist() == [0.0, 1.0, 2.0]
    with pytest.raises(ValueError, match=re.escape("(a single .npy array, not an .npz archive)")):
        read_npz(tmp_path / "ok.npy")
    with pytest.raises(FileNotFoundError):
        read_npz(tmp_path / "missing.npz")


def test_exact_enumeration_at_scores_near_1e300_normalizes_the_ratio():
    """Two labellings tied at 1e300 and one far below: marginals one half each, summing to one (they summed
    to 2 when ``exp(x - logsumexp(x))`` rounded both tied entries to probability 1)."""
    from tractable import FactorGraph, TableFactor
    from tractable.exact import enumerate_marginals

    fg = FactorGraph([2, 2])
    fg.add_factor(TableFactor([0, 1], [[1e300, 0.0], [0.0, 1e300]]))
    res = enumerate_marginals(fg)
    np.testing.assert_allclose(res.marginals, [[0.5, 0.5], [0.5, 0.5]])
    assert np.isfinite(res.log_partition)
