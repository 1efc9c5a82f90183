"""The entry algebra's shortcuts against the general path they replace.

Keys mapped without decoding, unions of ordered blocks, entries decoded on first use, and
local Jacobians recognised as (strided) diagonals: each equals what encoding, sorting and
expanding compute, and the prepared Jacobians built with them equal hand-derived ones.
"""

from __future__ import annotations

from types import SimpleNamespace

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
