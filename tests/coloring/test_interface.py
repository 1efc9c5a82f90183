"""sparsejac.color: arguments, errors, callables, and the `best` search."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.sparse as sp

import sparsejac
from sparsejac.coloring import ORDERS, check_result
from sparsejac.coloring.interface import BEST_ORDERS, MAX_RESTARTS, N_RANDOM
from sparsejac.pattern import as_pattern

from .helpers import arrowhead, laplacian_2d, random_pattern, small_matrices


@pytest.mark.parametrize(
    ("sparsity", "error", "message"),
    [
        pytest.param(
            np.ones(4), ValueError, r"`sparsity` must be 2-D; got an array of shape \(4,\)", id="1d"
        ),
        pytest.param(np.ones((2, 2, 2)), ValueError, r"`sparsity` must be 2-D", id="3d"),
        pytest.param(
            np.ones((0, 3)),
            ValueError,
            r"`sparsity` must have at least one row and one column; got shape \(0, 3\)",
            id="empty",
        ),
        pytest.param(
            None,
            TypeError,
            r"`sparsity` must be a scipy sparse matrix or array, a dense array or a matrix "
            r"file path; got NoneType",
            id="none",
        ),
        pytest.param({"a": 1}, TypeError, r"got dict", id="dict"),
        pytest.param(
            np.array([["a", "b"]]),
            TypeError,
            r"`sparsity` must hold numbers or booleans; got an array of dtype <U1",
            id="strings",
        ),
    ],
)
def test_bad_sparsity(sparsity, error, message):
    """Inputs that are not a 2-D non-empty matrix raise, naming `sparsity`."""
    with pytest.raises(error, match=message):
        sparsejac.color(sparsity)


def test_bad_partition():
    """An unknown partition lists the allowed ones."""
    with pytest.raises(
        ValueError,
        match=r"Unknown `partition` 'both'; expected one of "
        r"\['column', 'row', 'bidirectional', 'auto', 'symmetric'\]\.",
    ):
        sparsejac.color(np.eye(3), "both")


def test_bad_order():
    """An unknown order lists the names, 'best' and callables."""
    with pytest.raises(
        ValueError,
        match=r"Unknown `order` 'greedy'; expected one of \[.*'smallest_last'\], 'best' or a "
        r"callable\.",
    ):
        sparsejac.color(np.eye(3), order="greedy")
    with pytest.raises(TypeError, match=r"`order` must be a string or a callable; got list"):
        sparsejac.color(np.eye(3), order=[0, 1, 2])


@pytest.mark.parametrize(
    ("budget", "error"),
    [(-1.0, ValueError), (math.nan, ValueError), ("2", TypeError), (True, TypeError)],
)
def test_bad_time_budget(budget, error):
    """A negative, NaN or non-numeric time budget is rejected naming `time_budget`."""
    with pytest.raises(error, match=r"`time_budget` must be a non-negative number of seconds"):
        sparsejac.color(np.eye(3), time_budget=budget)


def test_callable_order():
    """A callable order is used, named by its __name__, and must return a permutation."""

    def reverse(pattern, partition, rng):
        n = pattern.shape[1] if partition == "column" else pattern.shape[0]
        return np.arange(n)[::-1]

    r = sparsejac.color(np.eye(4) + np.eye(4, k=1), order=reverse)
    assert r.order == "reverse"
    assert r.column_groups.tolist() == [1, 0, 1, 0]

    def broken(pattern, partition, rng):
        return np.zeros(pattern.shape[1], dtype=int)

    with pytest.raises(
        ValueError, match=r"`order` must return a permutation of range\(4\); got \[0, 0, 0, 0\]"
    ):
        sparsejac.color(np.eye(4), order=broken)


def test_order_entry_as_callable_equals_name():
    """Passing ORDERS[name] as a callable gives the same groups as the name (DSATUR too)."""
    a = random_pattern(20, 25, 0.15, 7)
    for name, fn in ORDERS.items():
        by_name = sparsejac.color(a, order=name, seed=4)
        by_fn = sparsejac.color(a, order=fn, seed=4)
        np.testing.assert_array_equal(by_name.column_groups, by_fn.column_groups)


@pytest.mark.parametrize(
    "fmt", ["dense", "csr_array", "csc_matrix", "coo_array", "pattern", "list"]
)
def test_accepts_every_input(fmt):
    """Dense arrays, lists, scipy matrices/arrays and SparsityPattern give the same colouring."""
    a = small_matrices()["dense_col"]
    obj = {
        "dense": a,
        "csr_array": sp.csr_array(a),
        "csc_matrix": sp.csc_matrix(a),
        "coo_array": sp.coo_array(a),
        "pattern": as_pattern(a),
        "list": a.tolist(),
    }[fmt]
    r = sparsejac.color(obj, order="natural")
    np.testing.assert_array_equal(
        r.column_groups, sparsejac.color(a, order="natural").column_groups
    )


def test_best_no_worse_than_any_order():
    """best never uses more colours than any named order, and reports its candidates."""
    a = random_pattern(40, 60, 0.08, 11)
    for partition in ("column", "row"):
        best = sparsejac.color(a, partition, check=True)
        assert best.order.startswith("best:")
        for name in ORDERS:
            assert best.n_colors <= sparsejac.color(a, partition, order=name).n_colors
        assert [c.name for c in best.candidates][:2] == ["natural", "dsatur"]
        assert best.n_colors == min(c.n_colors for c in best.candidates)


def test_best_tries_everything_within_budget():
    """Without a reachable bound, best runs all orders, randoms, restarts, recolouring, tabu."""
    a = random_pattern(30, 30, 0.2, 2)
    r = sparsejac.color(a, time_budget=math.inf)
    names = [c.name for c in r.candidates]
    assert r.n_colors > r.lower_bound
    assert names[: 2 + len(BEST_ORDERS) + N_RANDOM] == [
        "natural",
        "dsatur",
        *BEST_ORDERS,
        *(f"random#{i}" for i in range(N_RANDOM)),
    ]
    assert sum("@" in n for n in names) == MAX_RESTARTS
    assert names[-2:] == ["recolor", "tabu"]


def test_best_stops_at_lower_bound():
    """best stops as soon as a colouring reaches the lower bound."""
    r = sparsejac.color(small_matrices()["tridiagonal"])
    assert r.n_colors == r.lower_bound == 3
    assert [c.name for c in r.candidates] == ["natural"]
    r = sparsejac.color(laplacian_2d(30))
    assert r.order == "best:dsatur"
    assert r.n_colors == 5
    assert [c.name for c in r.candidates] == ["natural", "dsatur"]


def test_best_dense_line_shortcut():
    """When one line touches every vertex, best gives each its own colour at once."""
    r = sparsejac.color(arrowhead(9), check=True)
    assert r.n_colors == 9
    assert [c.name for c in r.candidates] == ["natural"]


def test_zero_budget_still_colours():
    """time_budget=0 runs only the two mandatory passes."""
    r = sparsejac.color(random_pattern(30, 30, 0.2, 2), time_budget=0)
    assert [c.name for c in r.candidates] == ["natural", "dsatur"]
    check_result(r)


def test_seeded_and_reproducible():
    """Same seed, same colouring; a Generator is accepted as seed."""
    a = random_pattern(25, 30, 0.2, 3)
    one = sparsejac.color(a, seed=5, time_budget=math.inf)
    two = sparsejac.color(a, seed=5, time_budget=math.inf)
    np.testing.assert_array_equal(one.column_groups, two.column_groups)
    assert one.order == two.order
    r = sparsejac.color(a, order="random", seed=np.random.default_rng(1))
    check_result(r)


def test_check_flag_runs_checker(monkeypatch):
    """check=True calls the checker on the result."""
    seen = []
    monkeypatch.setattr("sparsejac.coloring.interface.check_result", seen.append)
    r = sparsejac.color(np.eye(3), check=True)
    assert seen == [r]


def test_reads_matrix_files(tmp_path):
    """A .mtx path is read as the pattern."""
    import scipy.io

    path = tmp_path / "a.mtx"
    scipy.io.mmwrite(path, sp.coo_array(small_matrices()["banded_2_3"]))
    assert sparsejac.color(str(path), order="natural").n_colors == 6


# -- bidirectional and auto ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("cost", "error", "message"),
    [
        pytest.param(0, ValueError, r"`reverse_cost` must be a positive finite number", id="0"),
        pytest.param(-1.5, ValueError, r"relative to a forward one\); got -1.5", id="neg"),
        pytest.param(math.inf, ValueError, r"positive finite number", id="inf"),
        pytest.param(math.nan, ValueError, r"positive finite number", id="nan"),
        pytest.param(
            "2", TypeError, r"`reverse_cost` must be a positive number .* got str", id="s"
        ),
        pytest.param(True, TypeError, r"got bool", id="bool"),
    ],
)
@pytest.mark.parametrize("partition", ["column", "bidirectional", "auto"])
def test_bad_reverse_cost(partition, cost, error, message):
    """reverse_cost is validated for every partition, naming the argument."""
    with pytest.raises(error, match=message):
        sparsejac.color(np.eye(3), partition, reverse_cost=cost)


def test_default_reverse_cost_exported():
    """DEFAULT_REVERSE_COST is the measured 1.0 and exported from sparsejac.coloring."""
    from sparsejac.coloring import DEFAULT_REVERSE_COST, partition_cost

    assert DEFAULT_REVERSE_COST == 1.0
    r = sparsejac.color(arrowhead(7), "bidirectional")
    assert partition_cost(r) == r.n_forward + DEFAULT_REVERSE_COST * r.n_reverse


@pytest.mark.parametrize("name", sorted(small_matrices()))
def test_auto_is_the_cheapest(name):
    """auto returns the cheapest of column, row and bidirectional (same seed and budget)."""
    from sparsejac.coloring import partition_cost

    a = small_matrices()[name]
    for cost in (0.5, 1.5, 4.0):
        r = sparsejac.color(a, "auto", reverse_cost=cost, check=True)
        others = [sparsejac.color(a, p, reverse_cost=cost) for p in ("column", "row")]
        others.append(sparsejac.color(a, "bidirectional", reverse_cost=cost))
        assert partition_cost(r, cost) <= min(partition_cost(o, cost) for o in others)
        assert [c.name.split(":")[0] for c in r.candidates] == ["column", "row", "bidirectional"]
        assert r.order.startswith(f"auto:{r.partition}:")
        costs = [c.n_colors for c in r.candidates]
        assert r.n_colors in costs


def test_auto_follows_reverse_cost():
    """A wide matrix with a dense row: rows win when reverse is cheap, mixed otherwise."""
    a = random_pattern(6, 40, 0.1, 1)
    a[2] = 1
    cheap = sparsejac.color(a, "auto", reverse_cost=0.2)
    dear = sparsejac.color(a, "auto", reverse_cost=50.0)
    assert cheap.partition == "row"
    assert dear.n_reverse <= 1
    assert dear.partition in ("column", "bidirectional")


@pytest.mark.parametrize("order", sorted(set(sparsejac.coloring.BIDIRECTIONAL_ORDERS)))
def test_bidirectional_named_orders(order):
    """Every bidirectional order gives a valid colouring named after it."""
    r = sparsejac.color(arrowhead(9), "bidirectional", order=order, check=True)
    assert r.order == order
    assert r.partition == "bidirectional"
    assert sparsejac.color(arrowhead(9), "auto", order=order, check=True).n_colors <= 9


def test_bidirectional_callable_order():
    """A callable orders the n + m vertices of H; a non-permutation is rejected."""

    def rows_first(pattern, partition, rng):
        m, n = pattern.shape
        return np.concatenate((np.arange(n, n + m), np.arange(n)))

    r = sparsejac.color(arrowhead(6), "bidirectional", order=rows_first)
    assert (r.order, r.n_forward) == ("rows_first", 0)  # implicit covering: rows cover all

    def short(pattern, partition, rng):
        return np.arange(3)

    with pytest.raises(ValueError, match=r"`order` must return a permutation of range\(12\)"):
        sparsejac.color(arrowhead(6), "bidirectional", order=short)


def test_dense_orders_only_for_bidirectional():
    """The dense-first orders are refused for one-sided partitions, listing the names."""
    with pytest.raises(ValueError, match=r"Unknown `order` 'dense_rows_first'"):
        sparsejac.color(np.eye(3), "column", order="dense_rows_first")


def test_bidirectional_seeded_and_reproducible():
    """The same seed gives the same bicolouring."""
    a = random_pattern(30, 25, 0.12, 9)
    a[3] = 1
    r1 = sparsejac.color(a, "bidirectional", seed=5)
    r2 = sparsejac.color(a, "bidirectional", seed=5)
    assert np.array_equal(r1.column_groups, r2.column_groups)
    assert np.array_equal(r1.row_groups, r2.row_groups)


def test_color_partitions_shares_and_matches_color():
    """color_partitions equals separate color() calls and runs each search once."""
    from sparsejac.coloring import color_partitions

    a = small_matrices()["dense_row"]
    together = color_partitions(a, seed=3)
    assert list(together) == ["column", "row", "bidirectional", "auto"]
    for part, r in together.items():
        alone = sparsejac.color(a, part, seed=3)
        assert r.partition == alone.partition
        assert r.order == alone.order
        for name in ("column_groups", "row_groups"):
            x, y = getattr(r, name), getattr(alone, name)
            assert (x is None and y is None) or np.array_equal(x, y)
    both = together["bidirectional"]
    assert both.seconds >= together["column"].seconds + together["row"].seconds
    assert together["auto"].seconds == both.seconds


def test_color_partitions_bad_input():
    """A string instead of a sequence, or an unknown partition, is refused by name."""
    from sparsejac.coloring import color_partitions

    with pytest.raises(TypeError, match=r"`partitions` must be a sequence .* got the string"):
        color_partitions(np.eye(3), "column")
    with pytest.raises(ValueError, match=r"Unknown `partition` 'both'"):
        color_partitions(np.eye(3), ["column", "both"])
    with pytest.raises(ValueError, match=r"Unknown `order` 'dense_rows_first'"):
        color_partitions(np.eye(3), ["bidirectional", "column"], order="dense_rows_first")
    found = color_partitions(arrowhead(20), ["auto"], order="dense_rows_first", check=True)
    assert found["auto"].n_colors == 3
