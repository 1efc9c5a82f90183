"""ColoringResult: seeds, compression, exact decompression by gather, errors, immutability."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given
from hypothesis import strategies as st

import sparsejac
from sparsejac.coloring import BIDIRECTIONAL_ORDERS, ORDERS, ColoringResult, check_result
from sparsejac.coloring.graph import ONE_SIDED
from sparsejac.pattern import as_pattern

from .helpers import patterns, small_matrices

ALL_ORDERS = [*sorted(ORDERS), "best"]


def _values(a: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Random nonzero values on the pattern of a."""
    return (a != 0) * (rng.standard_normal(a.shape) + 3.0)


def _round_trip(a: np.ndarray, partition: str, order: str, rng: np.random.Generator) -> None:
    r = sparsejac.color(a, partition, order=order, seed=1)
    check_result(r)
    J = _values(a, rng)
    S, W = r.seed_matrices()
    if partition == "column":
        assert W is None
        assert S.shape == (a.shape[1], r.n_colors)
        back = r.decompress(B=J @ S)
    else:
        assert S is None
        assert W.shape == (r.n_colors, a.shape[0])
        back = r.decompress(C=W @ J)
    assert isinstance(back, sp.csr_array)
    assert back.dtype == np.float64
    assert back.has_sorted_indices
    np.testing.assert_array_equal(back.toarray(), J)
    np.testing.assert_array_equal(back.indptr, r.pattern.indptr)
    np.testing.assert_array_equal(back.indices, r.pattern.indices)
    assert r.compressed_shape == (J @ S if partition == "column" else W @ J).shape


@given(a=patterns(), partition=st.sampled_from(ONE_SIDED), order=st.sampled_from(ALL_ORDERS))
def test_round_trip_hypothesis(a, partition, order):
    """Decompressing the compressed J gives J exactly, for any pattern, partition and order."""
    _round_trip(a, partition, order, np.random.default_rng(0))


@pytest.mark.parametrize("order", ALL_ORDERS)
@pytest.mark.parametrize("partition", ONE_SIDED)
@pytest.mark.parametrize("name", sorted(small_matrices()))
def test_round_trip_small(name, partition, order, rng):
    """Round trip on every small named matrix × partition × order."""
    _round_trip(small_matrices()[name], partition, order, rng)


def test_n_colors_is_compressed_width():
    """n_colors equals the width of B and the height of C."""
    a = small_matrices()["random_sparse"]
    rc = sparsejac.color(a, "column")
    rr = sparsejac.color(a, "row")
    assert rc.seed_matrices()[0].shape[1] == rc.n_colors == rc.compress(a).shape[1]
    assert rr.seed_matrices()[1].shape[0] == rr.n_colors == rr.compress(a).shape[0]


def test_compress_matches_seed_product(rng):
    """compress(J) is J @ S (or W @ J), for dense and sparse J."""
    a = small_matrices()["dense_row"]
    J = _values(a, rng)
    rc = sparsejac.color(a, "column")
    rr = sparsejac.color(a, "row")
    np.testing.assert_allclose(rc.compress(sp.csr_array(J)), J @ rc.seed_matrices()[0])
    np.testing.assert_allclose(rr.compress(J), rr.seed_matrices()[1] @ J)
    with pytest.raises(ValueError, match=r"`J` has shape \(3, 3\) but this colouring is of a"):
        rc.compress(np.ones((3, 3)))


@pytest.mark.parametrize("partition", ONE_SIDED)
def test_decompress_data_layouts_and_out(partition, rng):
    """decompress_data: C- and F-ordered and strided inputs agree; `out` is filled in place."""
    a = small_matrices()["random_tall"]
    J = _values(a, rng)
    r = sparsejac.color(a, partition)
    X = r.compress(J)
    expected = J[r.pattern.rows, r.pattern.indices]
    kw = "B" if partition == "column" else "C"
    for variant in (X, np.asfortranarray(X), np.repeat(X, 2, axis=1)[:, ::2], X.astype(np.float32)):
        got = r.decompress_data(**{kw: variant})
        np.testing.assert_allclose(got, expected, rtol=1e-6)
    out = np.empty(r.pattern.nnz)
    assert r.decompress_data(**{kw: X}, out=out) is out
    np.testing.assert_array_equal(out, expected)
    csr = r.decompress(**{kw: X})
    csr.data[:] = 0
    r.decompress_data(**{kw: X}, out=csr.data)
    np.testing.assert_array_equal(csr.toarray(), J)


def test_gather_index_is_computed_once():
    """The gather index is cached on the result (a call is one np.take)."""
    r = sparsejac.color(small_matrices()["banded_2_3"], "column")
    B = r.compress(small_matrices()["banded_2_3"])
    r.decompress_data(B=B)
    first = r._gather_c
    r.decompress_data(B=B)
    assert r._gather_c is first
    assert not first.flags.writeable


@pytest.mark.parametrize(
    ("partition", "kwargs", "message"),
    [
        ("column", {}, r"a column colouring needs `B` = J @ S of shape \(4, 2\); got None"),
        (
            "column",
            {"B": np.zeros((4, 3))},
            r"`B` has shape \(4, 3\) but this column colouring of a \(4, 3\) pattern with 2 "
            r"colours expects \(4, 2\)",
        ),
        (
            "column",
            {"B": np.zeros((4, 2)), "C": np.zeros((2, 3))},
            r"a column colouring is decompressed from `B` = J @ S; `C` must be None, got an "
            r"array of shape \(2, 3\)",
        ),
        (
            "row",
            {"C": np.zeros(6)},
            r"`C` has shape \(6,\) but this row colouring of a \(4, 3\) pattern with 2 colours "
            r"expects \(2, 3\)",
        ),
        (
            "row",
            {"B": np.zeros((4, 2))},
            r"a row colouring is decompressed from `C` = W @ J; `B` must be None",
        ),
    ],
)
def test_decompress_errors(partition, kwargs, message):
    """Missing, extra or wrongly shaped B/C raise, naming it, its shape and the expected one."""
    a = np.array([[1, 1, 0], [0, 1, 0], [0, 0, 1], [1, 0, 1]])
    r = sparsejac.color(a, partition, order="natural")
    assert r.n_colors == 2
    with pytest.raises(ValueError, match=message):
        r.decompress(**kwargs)
    with pytest.raises(ValueError, match=message):
        r.decompress_data(**kwargs)


@pytest.mark.parametrize("out", [np.empty(3), np.empty(6, dtype=np.float32), [0.0] * 6])
def test_decompress_data_bad_out(out):
    """A wrong `out` is rejected with what was received."""
    a = np.array([[1, 1, 0], [0, 1, 0], [0, 0, 1], [1, 0, 1]])
    r = sparsejac.color(a, "column", order="natural")
    with pytest.raises(ValueError,
                       match=r"`out` must be a writeable float64 array of shape \(6,\); got"):
        r.decompress_data(B=np.zeros((4, 2)), out=out)


def test_result_is_frozen():
    """Fields cannot be reassigned and the groups array is read-only."""
    r = sparsejac.color(np.eye(3))
    with pytest.raises(dataclasses.FrozenInstanceError):
        r.n_colors = 5  # type: ignore[misc]
    with pytest.raises(ValueError, match="read-only"):
        r.column_groups[0] = 1  # type: ignore[index]
    assert r.row_groups is None
    assert r.groups is r.column_groups


def test_constructor_validates():
    """Inconsistent fields are rejected naming the field."""
    p = as_pattern(np.eye(3))
    with pytest.raises(ValueError, match=r"`column_groups` must have shape \(3,\); got \(2,\)"):
        ColoringResult(p, "column", "x", 1, np.zeros(2), None, 1)
    with pytest.raises(ValueError, match=r"a column colouring needs `column_groups`; got None"):
        ColoringResult(p, "column", "x", 1, None, np.zeros(3), 1)
    with pytest.raises(ValueError, match=r"`row_groups` values must lie in -1..0"):
        ColoringResult(p, "row", "x", 1, None, np.array([0, 1, 0]), 1)
    with pytest.raises(ValueError, match=r"Unknown `partition` 'both'"):
        ColoringResult(p, "both", "x", 1, np.zeros(3), None, 1)


def test_stats_and_repr():
    """stats() has the report's keys and JSON-friendly values; repr stays short."""
    r = sparsejac.color(small_matrices()["laplacian_5x5"])
    s = r.stats()
    assert set(s) >= {
        "shape",
        "nnz",
        "density",
        "partition",
        "order",
        "n_colors",
        "lower_bound",
        "gap",
        "compression",
        "seconds",
        "candidates",
    }
    assert s["shape"] == [25, 25]
    assert s["n_colors"] == r.n_colors == 5
    assert s["compression"] == 25 / 5
    assert s["gap"] == 0
    assert repr(r).startswith("ColoringResult(partition='column', order='best:")


# -- bidirectional results -----------------------------------------------------------------

BI_ORDERS = [*sorted(BIDIRECTIONAL_ORDERS), "best"]


def _bi_round_trip(a: np.ndarray, order: str, rng: np.random.Generator, part: str) -> None:
    r = sparsejac.color(a, part, order=order, seed=1, time_budget=0.05)
    check_result(r)
    J = _values(a, rng)
    S, W = r.seed_matrices()
    if r.partition != "bidirectional":
        return  # auto chose a one-sided colouring: covered by the one-sided tests
    m, n = a.shape
    assert S.shape == (n, r.n_forward)
    assert W.shape == (r.n_reverse, m)
    assert r.n_colors == r.n_forward + r.n_reverse
    assert r.compressed_shapes == ((m, r.n_forward), (r.n_reverse, n))
    back = r.decompress(B=J @ S, C=W @ J)
    assert isinstance(back, sp.csr_array)
    np.testing.assert_array_equal(back.toarray(), J)
    np.testing.assert_array_equal(back.indices, r.pattern.indices)
    B, C = r.compress(J)
    np.testing.assert_array_equal(r.decompress(*r.compress(J)).toarray(), J)
    np.testing.assert_allclose(B, J @ S)
    np.testing.assert_allclose(C, W @ J)


@given(
    a=patterns(),
    order=st.sampled_from(BI_ORDERS),
    part=st.sampled_from(["bidirectional", "auto"]),
)
def test_bidirectional_round_trip_hypothesis(a, order, part):
    """Bidirectional (and auto) colourings of any pattern decompress J exactly."""
    _bi_round_trip(a, order, np.random.default_rng(0), part)


@pytest.mark.parametrize("order", BI_ORDERS)
@pytest.mark.parametrize("name", sorted(small_matrices()))
def test_bidirectional_round_trip_small(name, order, rng):
    """Round trip on every small named matrix × bidirectional order."""
    _bi_round_trip(small_matrices()[name], order, rng, "bidirectional")


def _mixed() -> tuple[np.ndarray, sparsejac.ColoringResult]:
    a = small_matrices()["arrowhead"]
    r = sparsejac.color(a, "bidirectional")
    assert (r.n_forward, r.n_reverse) == (2, 1)
    return a, r


def test_bidirectional_layouts_and_out(rng):
    """C- and F-ordered, strided and float32 B and C give the same values; `out` is filled."""
    a, r = _mixed()
    J = _values(a, rng)
    B, C = r.compress(J)
    expected = J[r.pattern.rows, r.pattern.indices]
    variants = [
        lambda x: x,
        np.asfortranarray,
        lambda x: np.repeat(x, 2, axis=1)[:, ::2],
        lambda x: x.astype(np.float32),
    ]
    for fb in variants:
        for fc in variants:
            np.testing.assert_allclose(r.decompress_data(B=fb(B), C=fc(C)), expected, rtol=1e-6)
    out = np.empty(r.pattern.nnz)
    assert r.decompress_data(B=B, C=C, out=out) is out
    np.testing.assert_array_equal(out, expected)
    with pytest.raises(ValueError, match=r"`out` must be a writeable float64 array of shape"):
        r.decompress_data(B=B, C=C, out=np.empty(3))


def test_bidirectional_each_nonzero_reads_one_entry():
    """The gather reads each nonzero from B or from C: B alone or C alone misses the rest."""
    a, r = _mixed()
    J = _values(a, np.random.default_rng(1))
    B, C = r.compress(J)
    from_b = r.decompress_data(B=B, C=np.zeros_like(C))
    from_c = r.decompress_data(B=np.zeros_like(B), C=C)
    expected = J[r.pattern.rows, r.pattern.indices]
    np.testing.assert_array_equal(from_b + from_c, expected)
    assert ((from_b == 0) | (from_c == 0)).all()
    assert (from_b != 0).any()
    assert (from_c != 0).any()


def test_bidirectional_one_side_empty():
    """p == 0 or q == 0: None or a zero-width array is accepted for the empty side."""
    a = np.eye(4)
    p = as_pattern(a)
    fwd = ColoringResult(p, "bidirectional", "x", 1, np.zeros(4), np.full(4, -1), 1)
    rev = ColoringResult(p, "bidirectional", "x", 1, np.full(4, -1), np.zeros(4), 1)
    assert (fwd.n_forward, fwd.n_reverse, rev.n_forward, rev.n_reverse) == (1, 0, 0, 1)
    for r in (fwd, rev):
        S, W = r.seed_matrices()
        B, C = a @ S, W @ a
        assert r.compressed_shapes == (B.shape, C.shape)
        np.testing.assert_array_equal(r.decompress(B=B, C=C).toarray(), a)
    np.testing.assert_array_equal(fwd.decompress(B=a @ fwd.seed_matrices()[0]).toarray(), a)
    np.testing.assert_array_equal(rev.decompress(C=rev.seed_matrices()[1] @ a).toarray(), a)
    empty = ColoringResult(
        as_pattern(np.zeros((2, 3))), "bidirectional", "x", 0, np.full(3, -1), np.full(2, -1), 0
    )
    assert empty.decompress().nnz == 0
    assert empty.stats()["compression"] == 2.0


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (
            {"C": np.zeros((1, 5))},
            r"this bidirectional colouring has 2 forward colours, so it needs `B` = J @ S of "
            r"shape \(5, 2\); got None",
        ),
        (
            {"B": np.zeros((5, 2))},
            r"has 1 reverse colours, so it needs `C` = W @ J of shape \(1, 5\); got None",
        ),
        (
            {"B": np.zeros((5, 3)), "C": np.zeros((1, 5))},
            r"`B` has shape \(5, 3\) but this bidirectional colouring of a \(5, 5\) pattern "
            r"with 2 forward colours expects \(5, 2\)",
        ),
        (
            {"B": np.zeros((5, 2)), "C": np.zeros(5)},
            r"`C` has shape \(5,\) but this bidirectional colouring of a \(5, 5\) pattern with "
            r"1 reverse colours expects \(1, 5\)",
        ),
    ],
)
def test_bidirectional_decompress_errors(kwargs, message):
    """Missing or wrongly shaped B/C raise, naming it, the shape received and expected."""
    a = np.eye(5)
    a[0, :] = a[:, 0] = 1
    r = sparsejac.color(a, "bidirectional")
    assert (r.n_forward, r.n_reverse) == (2, 1)
    with pytest.raises(ValueError, match=message):
        r.decompress(**kwargs)
    with pytest.raises(ValueError, match=message):
        r.decompress_data(**kwargs)
    with pytest.raises(ValueError, match=r"has two compressed matrices; use `compressed_shapes`"):
        _ = r.compressed_shape
    with pytest.raises(ValueError, match=r"no single `groups` array"):
        _ = r.groups


def test_bidirectional_constructor_validates():
    """Both groups arrays are required, counts must add up, every nonzero must be read."""
    p = as_pattern(np.ones((2, 2)))
    with pytest.raises(ValueError, match=r"a bidirectional colouring needs `row_groups`; got None"):
        ColoringResult(p, "bidirectional", "x", 2, np.arange(2), None, 2)
    with pytest.raises(ValueError, match=r"`n_colors` is 3 but the groups use 2 forward and 0"):
        ColoringResult(p, "bidirectional", "x", 3, np.arange(2), np.full(2, -1), 2)
    with pytest.raises(ValueError, match=r"`column_groups` values must lie in -1..1"):
        ColoringResult(p, "bidirectional", "x", 2, np.array([-2, 1]), np.full(2, -1), 2)
    with pytest.raises(ValueError, match=r"do not recover J\[0, 0\] \(nor 3 other nonzeros\)"):
        ColoringResult(p, "bidirectional", "x", 1, np.zeros(2), np.full(2, -1), 2)
    r = ColoringResult(p, "bidirectional", "x", 2, np.arange(2), np.full(2, -1), 2)
    with pytest.raises(ValueError, match="read-only"):
        r.row_groups[0] = 1  # type: ignore[index]


def test_bidirectional_stats():
    """stats() reports forward and reverse passes; compression is min(m, n) per pass."""
    a, r = _mixed()
    s = r.stats()
    assert (s["partition"], s["n_colors"], s["n_forward"], s["n_reverse"]) == (
        "bidirectional",
        3,
        2,
        1,
    )
    assert s["compression"] == 8 / 3
    assert s["lower_bound"] == 2
    one = sparsejac.color(a, "row").stats()
    assert (one["n_forward"], one["n_reverse"]) == (0, 8)


def test_a_read_only_out_is_refused_by_name():
    import sparsejac

    r = sparsejac.color(np.eye(3) + np.eye(3, k=1), "column", "natural")
    B = np.ones((3, r.n_colors))
    out = np.zeros(r.pattern.nnz)
    out.setflags(write=False)
    with pytest.raises(ValueError, match="read-only"):
        r.decompress_data(B, out=out)


@pytest.mark.parametrize("seed", range(4))
def test_a_bicolouring_of_one_product_per_line_recovers_every_nonzero(seed):
    """Bidirectional groups giving every column (row) its own forward (reverse) pass and the
    other side none are recovered without the recoverability kernel: decompression equals J
    and the per-nonzero sides equal the kernel's, whose path a repeated group takes."""
    from sparsejac.coloring import _bikernels

    rng = np.random.default_rng(seed)
    a = (rng.random((9, 6)) < 0.5).astype(float)
    a[0] = 1.0
    J = _values(a, rng)
    pat = as_pattern(a)
    for cols, rows in ((rng.permutation(6), np.full(9, -1)), (np.full(6, -1), rng.permutation(9))):
        c = ColoringResult(pattern=pat, partition="bidirectional", order="test",
                           n_colors=int(max(cols.max(), rows.max()) + 1), column_groups=cols,
                           row_groups=rows, lower_bound=1)
        S, W = c.seed_matrices()
        got = c.decompress(B=J @ S, C=W @ J).toarray()
        np.testing.assert_array_equal(got, J)
        from_b, _ = _bikernels.recoverable(pat.indptr, pat.indices, pat.col_indptr,
                                           pat.col_indices, pat.csc_to_csr,
                                           c.column_groups, c.row_groups, *c._sides)
        np.testing.assert_array_equal(c._from_b, from_b)
    with pytest.raises(ValueError, match="do not recover"):  # two columns sharing row 0
        ColoringResult(pattern=pat, partition="bidirectional", order="test", n_colors=5,
                       column_groups=np.array([0, 1, 2, 3, 4, 4]), row_groups=np.full(9, -1),
                       lower_bound=1)


def test_a_nearly_dense_jacobian_is_coloured_without_a_search():
    """A curve fit's 200 x 7 Jacobian (dense but for a zero derivative at t = 0): its 7
    columns are the bound of every colouring (a row holds them all), so no bicolouring is
    searched and mixed mode is forward mode's colouring; a dense pattern gets one group per
    line on every side."""
    from sparsejac.coloring.by_mode import colour_modes

    t = np.linspace(0.0, 3.0, 200)

    def res(p):
        return p[0] * np.exp(-p[1] * t) + p[2] * np.exp(-p[3] * t) + p[4] * t * p[5] + p[6]

    jac = sparsejac.SparseJacobian(res, np.ones(7))
    assert jac.mode == "forward"
    assert jac.n_products == 7
    found = colour_modes(as_pattern(jac.sparsity), ["forward", "reverse", "mixed"], "natural",
                         0.0, None, 1.5)
    assert found["mixed"].n_forward == 7
    assert found["mixed"].n_reverse == 0
    assert found["reverse"].order == "uncoloured"
    dense = colour_modes(as_pattern(np.ones((4, 3))), ["forward", "reverse", "mixed"],
                         "natural", 0.0, None, 1.5)
    assert [dense[m].n_colors for m in ("forward", "reverse", "mixed")] == [3, 4, 3]
    assert dense["reverse"].lower_bound == 4
