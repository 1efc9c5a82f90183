"""The entry algebra's shortcuts against the general path they replace.

Keys mapped without decoding, unions of ordered blocks, entries decoded on first use, and
local Jacobians recognised as (strided) diagonals: each equals what encoding, sorting and
expanding compute, and the prepared Jacobians built with them equal hand-derived ones.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

import sparsejac
from sparsejac.ad.chain import _strided_diagonal
from sparsejac.ad.entries import Entries, KeyCodec, union_keys


def _triples(rng: np.random.Generator, n: int, n_rows: int, n_src: int, n_cols: int
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rows = rng.integers(0, n_rows, n)
    srcs = rng.integers(0, n_src, n)
    cols = rng.integers(0, n_cols, n)
    return rows, srcs, cols


@pytest.mark.parametrize("n_rows", [50, 2**40])  # bit fields, and the mixed-radix layout
def test_map_rows_equals_encoding_the_moved_rows(n_rows: int, rng: np.random.Generator) -> None:
    codec = KeyCodec(n_rows, 3, 2**21)
    assert codec.bits == (n_rows == 50)
    rows, srcs, cols = _triples(rng, 200, 10, 3, 2**21)
    keys = codec.encode(rows, srcs, cols)
    for shift, stride in [(0, 1), (7, 1), (0, 3), (5, 4)]:
        want = codec.encode(shift + stride * rows, srcs, cols)
        np.testing.assert_array_equal(codec.map_rows(keys, shift, stride), want)


def test_union_of_ordered_blocks_equals_the_general_union() -> None:
    blocks = [np.array([1, 4, 9]), np.array([], dtype=np.int64), np.array([10, 11]),
              np.array([20])]
    u, invs = union_keys(blocks)
    allk = np.concatenate(blocks)
    np.testing.assert_array_equal(u, np.unique(allk))
    for k, inv in zip(blocks, invs, strict=True):
        np.testing.assert_array_equal(u[inv], k)
    overlapping = [np.array([1, 4, 9]), np.array([4, 10])]  # not disjoint: merged
    u, invs = union_keys(overlapping)
    np.testing.assert_array_equal(u, [1, 4, 9, 10])
    np.testing.assert_array_equal(invs[1], [1, 3])


@pytest.mark.parametrize("seed", range(12))
def test_union_with_nested_operands_equals_the_general_union(seed: int) -> None:
    """Operands one of which holds another (a stencil's diagonal within its laplacian) make
    no new union array: the result equals np.unique, each operand's positions point at its
    keys, for two to four operands in any order, including equal ones."""
    rng = np.random.default_rng(seed)
    big = np.unique(rng.integers(0, 400, 150))
    parts = [big, big[rng.random(big.size) < 0.4], np.unique(rng.integers(0, 400, 30)),
             big.copy()]
    keys = [parts[i] for i in rng.permutation(4)[: 2 + seed % 3]]
    u, invs = union_keys(keys)
    np.testing.assert_array_equal(u, np.unique(np.concatenate(keys)))
    for k, inv in zip(keys, invs, strict=True):
        np.testing.assert_array_equal(u[inv], k)


def test_entries_from_keys_decode_on_first_use(rng: np.random.Generator) -> None:
    codec = KeyCodec(40, 2, 30)
    rows, srcs, cols = _triples(rng, 100, 40, 2, 30)
    keys = np.unique(codec.encode(rows, srcs, cols))
    e = Entries.from_keys(40, keys, codec, np.ones(keys.size))
    assert e._rows is None
    assert e.nnz == keys.size  # without decoding
    assert e._rows is None
    r, s, c = codec.decode(keys)
    np.testing.assert_array_equal(e.rows, r)
    np.testing.assert_array_equal(e.srcs, s)
    np.testing.assert_array_equal(e.cols, c)
    assert e.keys(codec) is keys  # the same layout: no re-encoding
    other = KeyCodec(40, 5, 30)  # another layout: encoded again
    np.testing.assert_array_equal(other.decode(e.keys(other))[0], r)
    e.drop_keys()
    assert e._keys is None
    np.testing.assert_array_equal(e.cols, c)


def test_strided_diagonals_are_recognised_and_nothing_else() -> None:
    def lj(rows: list[int] | np.ndarray, cols: list[int] | np.ndarray) -> SimpleNamespace:
        r, c = np.asarray(rows, dtype=np.int64), np.asarray(cols, dtype=np.int64)
        return SimpleNamespace(rows=r, cols=c, nnz=r.size)

    ar = np.arange(4, dtype=np.int64)
    assert _strided_diagonal(SimpleNamespace(rows=ar, cols=ar, nnz=4), 4, 4) == (0, 1)
    assert _strided_diagonal(lj([4, 5, 6, 7], ar), 4, 8) == (4, 1)  # second block of a concat
    assert _strided_diagonal(lj([1, 3, 5, 7], ar), 4, 8) == (1, 2)  # interleave
    assert _strided_diagonal(lj([1, 3, 5, 7], ar), 4, 7) is None  # past the output
    assert _strided_diagonal(lj([0, 1, 3, 4], ar), 4, 8) is None  # not evenly spaced
    assert _strided_diagonal(lj([3, 2, 1, 0], ar), 4, 4) is None  # reversed
    assert _strided_diagonal(lj([0, 1, 2, 3], [1, 0, 2, 3]), 4, 4) is None  # permuted input
    assert _strided_diagonal(lj([0, 1, 2], [0, 1, 2]), 4, 4) is None  # not every input


@pytest.mark.parametrize("join", ["concatenate", "stack", "interleave_reversed"])
def test_concatenations_and_interleaves_against_hand_derived(join: str,
                                                               rng: np.random.Generator) -> None:
    def f(x: np.ndarray) -> np.ndarray:
        u, v = x[:5] ** 2, np.sin(x[5:]) * x[:5]
        if join == "concatenate":
            return np.concatenate([u, v, 3.0 * u])
        if join == "stack":
            return np.stack([u, v], axis=-1).ravel()
        return np.stack([v, u[::-1]], axis=-1).ravel()

    def want(x: np.ndarray) -> np.ndarray:
        a, b = x[:5], x[5:]
        du = np.hstack([np.diag(2 * a), np.zeros((5, 5))])
        dv = np.hstack([np.diag(np.sin(b)), np.diag(np.cos(b) * a)])
        if join == "concatenate":
            return np.vstack([du, dv, 3.0 * du])
        if join == "stack":
            out = np.empty((10, 10))
            out[0::2], out[1::2] = du, dv
            return out
        out = np.empty((10, 10))
        out[0::2], out[1::2] = dv, du[::-1]
        return out

    x0 = rng.uniform(0.5, 1.5, 10)
    for engine in ("chain", "tape"):
        jac = sparsejac.SparseJacobian(f, x0, engine=engine)
        for x in (x0, rng.uniform(-1, 1, 10)):
            np.testing.assert_allclose(jac(x).toarray(), want(x), rtol=1e-14, atol=1e-14)


@pytest.mark.parametrize("n", [0, 1, 5, 64, 65, 1000])
def test_is_arange_against_numpy(n: int) -> None:
    from sparsejac.ad.entries import is_arange

    ar = np.arange(n)
    assert is_arange(ar, n)
    assert is_arange(ar.astype(np.int32), n)
    assert not is_arange(ar, n + 1)
    assert not is_arange(None, n)
    if n >= 3:
        bad = ar.copy()
        bad[n // 2] = -1  # the ends are right: only a full pass can tell
        assert not is_arange(bad, n)
        swapped = ar.copy()
        swapped[[1, 2]] = swapped[[2, 1]]
        assert not is_arange(swapped, n)
    if n == 1000:
        assert is_arange(ar.reshape(10, 100), n)
        assert not is_arange(ar[::-1], n)


@pytest.mark.parametrize("bits", [True, False])
def test_is_x_pattern_through_keys_equals_the_decoded_comparison(bits: bool) -> None:
    """``Entries.is_x_pattern`` compares keys chunk by chunk (no decoded arrays): the same
    answer as comparing decoded rows, sources and columns, across a chunk boundary, for a
    match, a changed column in the second chunk, a second source, and another length."""
    rng = np.random.default_rng(7)
    n_rows, nnz = 700_000, (1 << 20) + 5000
    rows = np.sort(rng.integers(0, n_rows, nnz))
    cols = rng.integers(0, 1000, nnz)
    order = np.lexsort((cols, rows))
    rows, cols = rows[order], cols[order]
    keep = np.r_[True, (rows[1:] != rows[:-1]) | (cols[1:] != cols[:-1])]
    rows, cols = rows[keep].astype(np.int32), cols[keep].astype(np.int32)
    # bit fields fit for these ranges; a huge row count forces the mixed-radix layout
    codec = KeyCodec(n_rows if bits else 2 ** 61, 2, 1000)
    assert codec.bits == bits
    srcs = np.zeros(rows.size, np.int64)

    def entries(s: np.ndarray) -> Entries:
        keys = codec.encode(rows.astype(np.int64), s, cols.astype(np.int64))
        return Entries.from_keys(n_rows, keys, codec, np.ones(rows.size))

    indptr = np.searchsorted(rows, np.arange(n_rows + 1)).astype(np.int32)
    assert entries(srcs).is_x_pattern(indptr, cols)
    other = cols.copy()
    other[(1 << 20) + 17] += 1
    assert not entries(srcs).is_x_pattern(indptr, other)
    moved = indptr.copy()  # a nonzero of the second chunk in the next row
    moved[rows[(1 << 20) + 17] + 1] -= 1
    assert not entries(srcs).is_x_pattern(moved, cols)
    second = srcs.copy()
    second[-1] = 1
    assert not entries(second).is_x_pattern(indptr, cols)
    shorter = np.minimum(indptr, rows.size - 1)
    assert not entries(srcs).is_x_pattern(shorter, cols[:-1])
    decoded = entries(srcs)
    decoded.drop_keys()  # the decoded comparison
    assert decoded.is_x_pattern(indptr, cols)
    assert not decoded.is_x_pattern(indptr, other)
    assert not decoded.is_x_pattern(moved, cols)
    shared = entries(srcs)  # the pattern's arrays taken: rows rebuilt from the pointer
    shared.set_pattern(indptr, cols)
    assert shared.nnz == rows.size
    assert shared._rows is None
    np.testing.assert_array_equal(shared.rows, rows)
    assert not shared.srcs.any()


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("low", [None, 4, 9])
def test_many_runs_merged_at_once_equal_the_general_union(seed: int, low: int | None) -> None:
    """Three or more increasing key arrays (a linear combination's terms) are merged in one
    pass, a row at a time for bit-field keys (rows above bit ``low``) or through a heap: the
    union is np.unique's, every array's positions point at its keys. Rows of more than 64
    keys (low = 9 puts up to 512 keys in a row) take the heap; an array out of order, the
    general path. Large enough for the compiled kernels as well as the interpreted ones."""
    rng = np.random.default_rng(seed)
    for size in (40, 30_000):
        keys = [np.unique(rng.integers(0, 4 * size, int(rng.integers(0, size))))
                for _ in range(int(rng.integers(3, 9)))]
        u, invs = union_keys(keys, low)
        want = np.unique(np.concatenate(keys))
        np.testing.assert_array_equal(u, want)
        for k, inv in zip(keys, invs, strict=True):
            np.testing.assert_array_equal(u[inv], k)
        shuffled = [k[rng.permutation(k.size)] if i == 1 else k for i, k in enumerate(keys)]
        if keys[1].size > 1:
            u, invs = union_keys(shuffled, low)  # not increasing: sorted instead
            np.testing.assert_array_equal(u, want)
            for k, inv in zip(shuffled, invs, strict=True):
                np.testing.assert_array_equal(u[inv], k)


def _stencil_sum(x: np.ndarray) -> np.ndarray:
    u = x.reshape(6, 5)
    lap = np.roll(u, 1, 0) + np.roll(u, -1, 0) + np.roll(u, 1, 1) + np.roll(u, -1, 1) - 4 * u
    return np.stack([2.0 * lap + 1.0 - 3.0 * u + u * u, lap - u], axis=-1).ravel()


def _doubling(x: np.ndarray) -> np.ndarray:
    s = x[1:] - x[:-1]
    for _ in range(8):  # 2**8 terms if each sum kept its operands' terms
        s = s + s
    return np.sin(s) + s


def _shared(x: np.ndarray) -> np.ndarray:
    s = 2.0 * x[1:] + x[:-1]  # a combination read by three nodes
    t = s - x[1:]
    return np.concatenate([np.exp(s), t * 3.0, np.cos(s) - t])


def _padded(x: np.ndarray) -> np.ndarray:
    s = np.concatenate([x[:5], np.ones(3), -x[5:]])  # one term, rows moved, a larger output
    t = np.stack([s, np.zeros(s.size)])  # one term again: rows kept, a larger output
    return np.sin(s) * t[0] + t[1] * s


def _accumulated(x: np.ndarray) -> np.ndarray:
    acc = np.zeros(x.size - 2)
    for i in range(12):  # stages of one structure: merged as they come past 16 per element
        acc = acc + (i + 1.0) * np.sin(x[2:] * x[:-2] + i) - 0.5 * x[1:-1]
    return acc


def _fd(f: Any, x: np.ndarray) -> np.ndarray:
    """Central differences, column by column (f is smooth and O(1) here)."""
    h = 1e-6
    cols = [(f(x + h * e) - f(x - h * e)) / (2 * h) for e in np.eye(x.size)]
    return np.array(cols).T


@pytest.mark.parametrize("f", [_stencil_sum, _doubling, _shared, _padded, _accumulated])
def test_linear_combinations_merged_once_give_the_jacobian(f: Any) -> None:
    """Sums, differences, constant multiples, concatenations and interleaves are kept as
    terms and merged when another node reads them: a 5-point stencil and its interleave,
    a sum doubled eight times (its terms capped), a combination read by three nodes, one term
    of a larger output (a concatenation with a constant). Against
    finite differences and the compiled tape (another engine), at two points."""
    rng = np.random.default_rng(3)
    x0 = rng.normal(size=30)
    jac = sparsejac.SparseJacobian(f, x0, engine="chain")
    tape = sparsejac.SparseJacobian(f, x0, engine="tape")
    assert jac.stats()["engine"]["engine"] == "chain"
    for x in (x0, x0 + 0.1 * rng.normal(size=30)):
        got = jac(x).toarray()
        scale = np.abs(got).max()
        np.testing.assert_allclose(got, _fd(f, x), rtol=1e-6, atol=1e-6 * scale)
        np.testing.assert_allclose(got, tape(x).toarray(), rtol=1e-13, atol=1e-13 * scale)
