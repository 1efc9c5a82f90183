"""The public Jacobian API: ``jacobian`` and ``SparseJacobian`` on the scenario catalogue.

Exact modes agree with the hand-derived Jacobians of ``tests/scenarios.py`` to 1e-12
(relative to the largest entry), at the preparation point and at new points; ``mode="fd"``
within :data:`FD_TOL`. Then the contract of the prepared object (``out=``, shared index
arrays, ``repr``, ``stats()``, the ``auto`` cost rule, user patterns, ``args``/``kwargs``,
value-dependent functions) and the bad-input errors (each names the argument).
"""

from __future__ import annotations

import functools
import itertools
import json
import re
import threading
import time
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

import sparsejac
from sparsejac.coloring import DEFAULT_REVERSE_COST
from sparsejac.errors import ConcretizationError, UnsupportedPrimitiveError
from tests.scenarios import SCENARIOS, by_name, random_point, scenario_params

#: Exact modes: relative error (to the largest entry of the analytic Jacobian).
EXACT_TOL = 1e-12
#: ``mode="fd"`` (forward differences, step sqrt(eps) max(1, |x|)): truncation error
#: ~ sqrt(eps) |f''| plus rounding ~ sqrt(eps) |f|, relative to the largest entry.
FD_TOL = 1e-6

EXACT_MODES = ["forward", "reverse", "mixed", "auto"]
MODES = [*EXACT_MODES, "fd"]


def assert_jacobian(actual: sp.csr_array, expected: np.ndarray, tol: float = EXACT_TOL) -> None:
    """``actual`` is a float64 csr_array equal to ``expected`` up to ``tol`` × max |expected|."""
    assert isinstance(actual, sp.csr_array)
    assert actual.dtype == np.float64
    assert actual.shape == expected.shape
    scale = max(float(np.abs(expected).max()), 1e-300)
    np.testing.assert_allclose(actual.toarray(), expected, rtol=tol, atol=tol * scale)


def tol_of(mode: str) -> float:
    return FD_TOL if mode == "fd" else EXACT_TOL


# ---------------------------------------------------------------------------------------------
# correctness on the catalogue
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("s", scenario_params())
def test_jacobian_matches_analytic(s, mode, rng):
    """``jacobian(f, x)`` equals the hand-derived Jacobian at a random point, pattern included."""
    x = random_point(s, rng)
    jac = sparsejac.jacobian(s.f, x, mode=mode)
    assert_jacobian(jac, s.jacobian(x), tol_of(mode))
    # the stored entries are exactly the detected (global) pattern
    stored = np.zeros(jac.shape, dtype=bool)
    coo = jac.tocoo()
    stored[coo.row, coo.col] = True
    np.testing.assert_array_equal(stored, s.pattern)
    assert jac.nnz == s.pattern.sum()


def expected_auto_mode(stats: dict, reverse_cost: float) -> str:
    """The cost rule, re-derived: lowest forward + reverse_cost x reverse products; ties go to
    forward, reverse, mixed; a one-sided mixed colouring counts as that side's mode."""
    order = ["forward", "reverse", "mixed"]
    products = stats["products"]
    fwd, rev = products["mixed"]
    if (rev == 0 and stats["colors"]["forward"] <= fwd + rev) or (
            fwd == 0 and stats["colors"]["reverse"] <= fwd + rev):
        order.remove("mixed")
    cost = {m: products[m][0] + reverse_cost * products[m][1] for m in order}
    return min(order, key=lambda m: (cost[m], order.index(m)))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("s", scenario_params())
def test_prepared_matches_analytic_at_new_points(s, mode, rng):
    """A ``SparseJacobian`` prepared at x0 is exact at x0 and at new points (no re-tracing)."""
    jac = sparsejac.SparseJacobian(s.f, s.x0, mode=mode)
    assert jac.mode == (mode if mode != "auto" else expected_auto_mode(jac.stats(),
                                                                       DEFAULT_REVERSE_COST))
    assert_jacobian(jac(s.x0), s.jacobian(s.x0), tol_of(mode))
    for _ in range(2):
        x = random_point(s, rng)
        assert_jacobian(jac(x), s.jacobian(x), tol_of(mode))
    assert jac.stats()["preparations"] == 1


@pytest.mark.parametrize("mode", ["forward", "reverse"])
def test_flat_x_accepted_for_shaped_x0(mode, rng):
    """A flat vector of x0's size is accepted for a shaped x0 (solvers pass flat vectors),
    differentiated reshaped; this f also runs on the flat vector, giving another value, so
    the first flat call warns that the reshape changes what f computes."""
    s = by_name("rank3_input")
    jac = sparsejac.SparseJacobian(s.f, s.x0, mode=mode)
    x = random_point(s, rng)
    with pytest.warns(RuntimeWarning, match="`x` is a flat vector"):
        assert_jacobian(jac(x.ravel()), s.jacobian(x))


def test_jacobian_passes_args(rng):
    """``jacobian(f, x, args=...)`` passes the extra arguments to f."""
    a = rng.uniform(1.0, 2.0, size=6)

    def f(x, a, power):
        return a * x**power

    x = rng.uniform(0.5, 1.5, size=6)
    assert_jacobian(sparsejac.jacobian(f, x, args=(a, 3)), np.diag(3 * a * x**2))


# ---------------------------------------------------------------------------------------------
# the prepared object's contract
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_out_refills_in_place(mode, rng):
    """``jac(x, out=J)`` overwrites J's data in place and returns J itself."""
    s = by_name("brusselator_roll")
    jac = sparsejac.SparseJacobian(s.f, s.x0, mode=mode)
    first = jac(s.x0)
    data = first.data
    x = random_point(s, rng)
    again = jac(x, out=first)
    assert again is first
    assert again.data is data
    assert_jacobian(again, s.jacobian(x), tol_of(mode))


@pytest.mark.parametrize("bad", [
    pytest.param(lambda j: sp.csr_array(j.toarray()[:, :-1]), id="other_shape"),
    pytest.param(lambda j: j.tocsc(), id="csc"),
    pytest.param(lambda j: sp.csr_array(j, dtype=np.float32), id="float32"),
    pytest.param(lambda j: j.toarray(), id="dense"),
])
def test_out_of_another_kind_is_refused(bad):
    """An ``out`` that is not this Jacobian's kind of matrix is refused, naming ``out``."""
    s = by_name("diffcube")
    jac = sparsejac.SparseJacobian(s.f, s.x0, mode="forward")
    with pytest.raises(ValueError, match=r"`out` must be a csr_array returned by this"):
        jac(s.x0, out=bad(jac(s.x0)))


@pytest.mark.parametrize("mode", MODES)
def test_calls_return_matrices_with_their_own_index_arrays(mode, rng):
    """Two calls return new matrices on the pattern, each with its own int32 index arrays."""
    s = by_name("burgers_zeros_like")
    jac = sparsejac.SparseJacobian(s.f, s.x0, mode=mode)
    a, b = jac(s.x0), jac(random_point(s, rng))
    assert a is not b
    assert not np.shares_memory(a.data, b.data)
    assert not np.shares_memory(a.indices, b.indices)
    assert not np.shares_memory(a.indptr, b.indptr)
    assert a.indices.dtype == np.int32
    assert a.indptr.dtype == np.int32
    np.testing.assert_array_equal(a.indices, jac.sparsity.indices)
    np.testing.assert_array_equal(a.indptr, jac.sparsity.indptr)
    assert a.has_canonical_format


@pytest.mark.parametrize(("mode", "text"), [
    ("forward", "mode='forward': 2 JVPs instead of 9)"),
    ("reverse", "mode='reverse': 2 VJPs instead of 8)"),
    # fd counts the evaluations of f (2 colours + the base point, against n + 1 dense)
    ("fd", "mode='fd': 3 f evaluations instead of 10, approximate)"),
])
def test_repr_counts_products(mode, text):
    """The repr states the products per Jacobian against the uncompressed count."""
    s = by_name("diffsquare")  # bidiagonal 8 x 9: two colours either way
    jac = sparsejac.SparseJacobian(s.f, s.x0, mode=mode)
    assert repr(jac) == f"SparseJacobian(f, shape=(8, 9), nnz=16, {text}"


def test_repr_uses_the_function_name_and_thousands_separators():
    """Large counts are printed with separators, and adapters name the user's function."""
    def rhs(t, y):
        return -y**3 + np.roll(y, 1)

    jac = sparsejac.ode_jacobian(rhs, 0.0, np.ones(1500), mode="forward")
    assert repr(jac) == ("OdeJacobian(SparseJacobian(rhs, shape=(1500, 1500), nnz=3,000, "
                         "mode='forward': 2 JVPs instead of 1,500), format='csr')")


@pytest.mark.parametrize("mode", MODES)
def test_stats_keys_and_values(mode):
    """``stats()`` is JSON-ready and reports sizes, colours, the choice and the timings."""
    s = by_name("arrowhead")
    jac = sparsejac.SparseJacobian(s.f, s.x0, mode=mode)
    st = jac.stats()
    json.dumps(st)
    assert set(st) == {"shape", "nnz", "mode", "reason", "n_products", "exact",
                       "retraced_each_call", "colors", "products", "costs", "lower_bound",
                       "coloring_budget", "deferred_search", "coloring_work", "seconds", "engine",
                       "preparations", "branches"}
    assert st["shape"] == [s.m, s.n]
    assert st["nnz"] == s.pattern.sum() == jac.sparsity.nnz
    assert st["mode"] == jac.mode
    assert st["n_products"] == jac.n_products
    assert jac.n_products == jac.coloring.n_colors + (mode == "fd")  # fd: + the base point
    assert st["exact"] is (jac.mode != "fd")
    assert st["retraced_each_call"] is False
    assert st["colors"][jac.mode] == jac.coloring.n_colors
    # arrowhead: one dense row and one dense column, so 8 colours one-sided either way
    assert st["lower_bound"] == {"column": s.n, "row": s.m}
    assert {"detection", "coloring", "preparation"} <= set(st["seconds"])
    assert all(v >= 0 for v in st["seconds"].values())  # seconds only: costs are elsewhere
    assert "calibration" not in st["seconds"]  # no timing unless calibrate=True
    assert (st["engine"] is None) == (mode == "fd")
    assert st["preparations"] == 1
    # the default search effort: a function of the pattern's size (no clock)
    assert st["coloring_budget"] == sparsejac.coloring.budget.prepared_effort(st["nnz"])
    if mode == "auto":
        assert set(st["colors"]) >= {"forward", "reverse"}
        assert st["reason"].startswith("lowest cost = forward products + ")  # no timing
        assert st["mode"] == expected_auto_mode(st, DEFAULT_REVERSE_COST)
    else:
        assert st["colors"] == {mode: jac.coloring.n_colors}
        assert st["reason"] == f"mode={mode!r} was requested"


# ---------------------------------------------------------------------------------------------
# mode="auto" without calibration: forward products + reverse_cost x reverse products
# ---------------------------------------------------------------------------------------------


def _dense_row(x):
    """A diagonal plus one dense row: forward needs n colours, reverse 2."""
    return np.concatenate([x**2, np.sum(x, keepdims=True)])


def _dense_column(x):
    """A diagonal plus one dense column: reverse needs m colours, forward 2."""
    return x**2 + x[0]


@pytest.mark.parametrize(("f", "reverse_cost", "expected"), [
    pytest.param(_dense_row, DEFAULT_REVERSE_COST, "reverse", id="dense_row"),
    pytest.param(_dense_column, DEFAULT_REVERSE_COST, "forward", id="dense_column"),
    # bidiagonal: two colours both ways; the tie goes to the cheaper product
    pytest.param(by_name("diffsquare").f, DEFAULT_REVERSE_COST, "forward", id="tie_forward"),
    pytest.param(by_name("diffsquare").f, 0.5, "reverse", id="tie_cheap_reverse"),
    pytest.param(by_name("diffsquare").f, 1.0, "forward", id="exact_tie_forward_first"),
])
def test_auto_without_calibration_follows_the_cost_rule(f, reverse_cost, expected):
    """``calibrate=False`` picks the lowest forward + reverse_cost × reverse products."""
    x0 = np.linspace(0.5, 1.5, 9)
    jac = sparsejac.SparseJacobian(f, x0, calibrate=False, reverse_cost=reverse_cost)
    assert jac.mode == expected
    assert jac.reason.startswith(f"lowest cost = forward products + {reverse_cost:g} x reverse")
    fwd, rev = jac.stats()["colors"]["forward"], jac.stats()["colors"]["reverse"]
    costs = {"forward": fwd, "reverse": reverse_cost * rev}
    assert costs[expected] == min(costs.values())
    st = jac.stats()
    assert st["costs"]["forward"] == costs["forward"]
    assert st["costs"]["reverse"] == costs["reverse"]
    # regression: with calibrate=False, the seconds hold seconds only (no product counts)
    assert "calibration" not in st["seconds"]


def test_auto_with_calibration_never_times_a_hopeless_mode():
    """Calibration (opt-in) skips a mode that needs far more products (the dense row in
    forward mode) and keeps the earliest timed mode unless a later one is clearly faster."""
    x0 = np.linspace(0.5, 1.5, 200)
    jac = sparsejac.SparseJacobian(_dense_row, x0, calibrate=True)
    assert "forward not timed (200 products)" in jac.reason
    timed = jac.stats()["seconds"]["calibration"]
    assert all(v > 0 for v in timed.values())
    assert "forward" not in timed
    expected = next(iter(timed))
    for m, t in list(timed.items())[1:]:
        if t < timed[expected] / (1 + sparsejac.pipeline.CALIBRATION_MARGIN):
            expected = m
    assert jac.mode == expected
    assert_jacobian(jac(x0), np.vstack([np.diag(2 * x0), np.ones((1, 200))]))


@pytest.mark.parametrize(("reverse_cost", "error"), [(0, ValueError), (-1.0, ValueError),
                                                      ("1.5", TypeError), (None, TypeError)])
@pytest.mark.parametrize("entry", ["jacobian", "SparseJacobian", "color"])
def test_bad_reverse_cost_is_refused(reverse_cost, error, entry):
    """``reverse_cost`` must be a positive number: one rule and message everywhere."""
    def call():
        if entry == "color":
            return sparsejac.color(np.eye(3), "auto", reverse_cost=reverse_cost)
        return getattr(sparsejac, entry)(_dense_row, np.ones(3), reverse_cost=reverse_cost)

    with pytest.raises(error, match=r"`reverse_cost` must be a positive"):
        call()


# ---------------------------------------------------------------------------------------------
# user sparsity
# ---------------------------------------------------------------------------------------------


def _superset(pattern: np.ndarray) -> np.ndarray:
    """The pattern plus its transpose's band and a full last column (entries J never fills)."""
    sup = pattern.copy()
    m, n = sup.shape
    sup |= np.eye(m, n, -1, dtype=bool)
    sup[:, -1] = True
    return sup


@pytest.mark.parametrize("mode", [*EXACT_MODES, "fd"])
@pytest.mark.parametrize("as_type", [
    pytest.param(sp.csr_array, id="csr_array"),
    pytest.param(sp.coo_matrix, id="coo_matrix"),
    pytest.param(np.asarray, id="dense"),
])
@pytest.mark.parametrize("name", ["diffsquare", "burgers_zeros_like"])
def test_superset_sparsity_stores_explicit_zeros(name, as_type, mode, rng):
    """A user pattern containing the detected one is used as is: exact values, explicit zeros."""
    s = by_name(name)
    sup = _superset(s.pattern)
    assert (sup & ~s.pattern).any()
    jac = sparsejac.SparseJacobian(s.f, s.x0, sparsity=as_type(sup), mode=mode)
    x = random_point(s, rng)
    for J in (jac(x), sparsejac.jacobian(s.f, x, sparsity=as_type(sup), mode=mode)):
        assert J.nnz == sup.sum()
        stored = sp.coo_array(J)
        np.testing.assert_array_equal(sup[stored.row, stored.col], True)
        extra = ~s.pattern[stored.row, stored.col]
        np.testing.assert_array_equal(stored.data[extra], 0.0)  # stored, and exactly zero
        assert_jacobian(J, s.jacobian(x), tol_of(mode))
    np.testing.assert_array_equal(jac.sparsity.toarray(), sup)


@pytest.mark.parametrize("entry", ["jacobian", "SparseJacobian"])
def test_subset_sparsity_is_refused(entry):
    """A user pattern missing a detected dependency is refused, naming an entry it misses."""
    s = by_name("burgers_zeros_like")
    sub = s.pattern.copy()
    sub[4, 5] = False
    make = sparsejac.jacobian if entry == "jacobian" else sparsejac.SparseJacobian
    with pytest.raises(ValueError, match=re.escape(
            "`sparsity` misses 1 entries that f depends on (the trace found them), e.g. (4, 5)")):
        make(s.f, s.x0, sparsity=sub)


@pytest.mark.parametrize("entry", ["jacobian", "SparseJacobian"])
def test_sparsity_of_the_wrong_shape_is_refused(entry):
    """A user pattern whose shape is not (f(x).size, x.size) is refused, with both shapes."""
    s = by_name("diffsquare")
    make = sparsejac.jacobian if entry == "jacobian" else sparsejac.SparseJacobian
    with pytest.raises(ValueError, match=re.escape(
            "`sparsity` has shape (9, 9) but the Jacobian of f has shape (8, 9)")):
        make(s.f, s.x0, sparsity=np.ones((9, 9)))


# ---------------------------------------------------------------------------------------------
# args and kwargs: the same objects reuse the preparation, others prepare again
# ---------------------------------------------------------------------------------------------


def _scaled(x, a, *, power):
    return a * np.diff(x**power)


def _diffpower_jac(x, a, power):
    n = x.size
    jac = np.zeros((n - 1, n))
    i = np.arange(n - 1)
    jac[i, i] = -power * a * x[:-1] ** (power - 1)
    jac[i, i + 1] = power * a * x[1:] ** (power - 1)
    return jac


@pytest.mark.parametrize("mode", ["forward", "reverse", "fd"])
def test_same_args_objects_reuse_the_preparation(mode, rng):
    """Passing the preparation's own args/kwargs objects again does not prepare again."""
    x0 = rng.uniform(0.5, 1.5, 7)
    a = rng.uniform(1.0, 2.0, 6)
    power = 3
    jac = sparsejac.SparseJacobian(_scaled, x0, args=(a,), kwargs={"power": power}, mode=mode)
    for _ in range(2):
        x = rng.uniform(0.5, 1.5, 7)
        assert_jacobian(jac(x, a, power=power), _diffpower_jac(x, a, power), tol_of(mode))
        assert_jacobian(jac(x), _diffpower_jac(x, a, power), tol_of(mode))
    assert jac.stats()["preparations"] == 1


@pytest.mark.parametrize("mode", ["forward", "reverse", "fd"])
def test_other_args_objects_prepare_again(mode, rng):
    """New args/kwargs objects trigger a new preparation, and the result uses the new values."""
    x0 = rng.uniform(0.5, 1.5, 7)
    a = rng.uniform(1.0, 2.0, 6)
    jac = sparsejac.SparseJacobian(_scaled, x0, args=(a,), kwargs={"power": 3}, mode=mode)
    x = rng.uniform(0.5, 1.5, 7)
    b = a * 2.0
    assert_jacobian(jac(x, b, power=3), _diffpower_jac(x, b, 3), tol_of(mode))
    assert jac.stats()["preparations"] == 2
    assert_jacobian(jac(x, b, power=2), _diffpower_jac(x, b, 2), tol_of(mode))
    assert jac.stats()["preparations"] == 3
    # an equal but distinct array is another object: prepared again, still right
    assert_jacobian(jac(x, b.copy(), power=2), _diffpower_jac(x, b, 2), tol_of(mode))
    assert jac.stats()["preparations"] == 4


# ---------------------------------------------------------------------------------------------
# value-dependent f (Python control flow on values)
# ---------------------------------------------------------------------------------------------


def _branchy(x):
    """Squares or sines by the sign of x[0], decided by a Python ``if`` (diagonal either way)."""
    if x[0] > 0:
        return x**2
    return np.sin(x)


def _branchy_jac(x):
    return np.diag(2 * x if x[0] > 0 else np.cos(x))


def _couples_when_positive(x):
    """Diagonal for x[0] <= 0; couples every output to x[0] otherwise."""
    if x[0] > 0:
        return x * x[0]
    return x**3


def test_value_dependent_f_without_sparsity_explains_the_fix():
    """Without ``sparsity``, a Python branch on values raises ConcretizationError naming the fix."""
    with pytest.raises(ConcretizationError) as info:
        sparsejac.SparseJacobian(_branchy, np.ones(5))
    msg = str(info.value)
    assert "`sparsity=`" in msg
    assert "jacobian_sparsity(f, x, local=True)" in msg
    assert "traced again at every call" in msg


def test_jacobian_of_value_dependent_f_is_exact_at_the_point(rng):
    """``jacobian`` differentiates the branch taken at x (a local trace)."""
    for sign in (1.0, -1.0):
        x = sign * rng.uniform(0.5, 1.5, 5)
        assert_jacobian(sparsejac.jacobian(_branchy, x), _branchy_jac(x))


@pytest.mark.parametrize("mode", ["forward", "reverse", "auto"])
def test_value_dependent_f_with_sparsity_is_retraced(mode, rng):
    """With ``sparsity=``, f is traced again at each call and both branches come out exact."""
    jac = sparsejac.SparseJacobian(_branchy, np.ones(5), sparsity=sp.eye_array(5), mode=mode)
    assert jac.stats()["retraced_each_call"] is True
    for sign in (1.0, -1.0, 1.0):
        x = sign * rng.uniform(0.5, 1.5, 5)
        assert_jacobian(jac(x), _branchy_jac(x))
    assert jac.stats()["preparations"] == 1


def test_value_dependent_local_pattern_outside_sparsity_is_refused(rng):
    """A branch whose local pattern leaves the given ``sparsity`` raises instead of being wrong."""
    jac = sparsejac.SparseJacobian(_couples_when_positive, -np.ones(5),
                                   sparsity=sp.eye_array(5), mode="forward")
    x = -rng.uniform(0.5, 1.5, 5)
    assert_jacobian(jac(x), np.diag(3 * x**2))
    with pytest.raises(ValueError, match=r"`sparsity` misses 4 entries that f depends on"):
        jac(-x)


# ---------------------------------------------------------------------------------------------
# bad input: each a clear exception naming the argument
# ---------------------------------------------------------------------------------------------


def _f(x):
    return x[1:] ** 2 - x[:-1]


_X = np.linspace(0.5, 1.5, 5)


@pytest.mark.parametrize("x", [
    pytest.param(np.array([1.0, np.nan, 2.0]), id="nan"),
    pytest.param(np.array([1.0, 2.0, np.inf]), id="inf"),
    pytest.param(np.array([[1.0, 2.0], [-np.inf, 0.0]]), id="2d_minus_inf"),
])
@pytest.mark.parametrize("entry", ["jacobian", "SparseJacobian_x0", "SparseJacobian_x", "fd"])
def test_non_finite_x_is_refused(entry, x):
    """A NaN or infinite x is refused, naming the argument and the offending element."""
    if entry == "SparseJacobian_x":
        jac = sparsejac.SparseJacobian(_f, np.ones(x.shape))
        call, name = (lambda: jac(x)), "x"
    elif entry == "SparseJacobian_x0":
        call, name = (lambda: sparsejac.SparseJacobian(_f, x)), "x0"
    elif entry == "fd":
        call, name = (lambda: sparsejac.jacobian(_f, x, mode="fd")), "x"
    else:
        call, name = (lambda: sparsejac.jacobian(_f, x)), "x"
    bad = int(np.flatnonzero(~np.isfinite(x))[0])
    with pytest.raises(ValueError, match=re.escape(
            f"`{name}` must be finite; element {bad} (flat index) is {x.ravel()[bad]}")):
        call()


def test_huge_finite_x_is_accepted_without_warnings():
    """Finite values beyond 1e154 pass the finiteness check without an overflow warning."""
    x = np.array([1e200, -3e300, 2.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        J = sparsejac.jacobian(lambda v: 2.0 * v, x)
    np.testing.assert_array_equal(J.toarray(), 2.0 * np.eye(3))


@pytest.mark.parametrize(("x", "what"), [
    pytest.param(np.ones(3) + 1j, "an array of complex numbers", id="complex"),
    pytest.param(np.array([1, 2, 3], dtype=object), "an array of dtype object", id="object"),
    pytest.param(np.array(["a", "b", "c"]), "an array of dtype <U1", id="strings"),
    pytest.param("abc", "str 'abc'", id="str"),
    pytest.param([1.0, "b", 3.0], "list [1.0, 'b', 3.0]", id="mixed_list"),
    pytest.param({"a": 1.0}, "dict {'a': 1.0}", id="dict"),
    pytest.param(None, "NoneType None", id="none"),
    pytest.param(sp.csr_array(np.eye(3)), "csr_array", id="sparse"),
])
@pytest.mark.parametrize("entry", ["jacobian", "SparseJacobian_x0", "SparseJacobian_x", "fd"])
def test_x_of_the_wrong_dtype_is_refused(entry, x, what):
    """Complex, object and string x are refused with a TypeError naming the argument."""
    if entry == "SparseJacobian_x":
        jac = sparsejac.SparseJacobian(_f, np.ones(3))
        call, name = (lambda: jac(x)), "x"
    elif entry == "SparseJacobian_x0":
        call, name = (lambda: sparsejac.SparseJacobian(_f, x)), "x0"
    elif entry == "fd":
        call, name = (lambda: sparsejac.SparseJacobian(_f, x, mode="fd",
                                                        sparsity=np.ones((2, 3)))), "x0"
    else:
        call, name = (lambda: sparsejac.jacobian(_f, x)), "x"
    with pytest.raises(TypeError, match=re.escape(
            f"`{name}` must be an array of real numbers; got {what}")):
        call()


def test_empty_x_is_refused():
    """An x without elements has no Jacobian; the error names ``x``."""
    with pytest.raises(ValueError, match=re.escape("`x` must have at least one element")):
        sparsejac.jacobian(_f, np.ones(0))


@pytest.mark.parametrize(("x0", "x", "message"), [
    pytest.param(np.ones(5), np.ones(6), "`x` has shape (6,) but this Jacobian was prepared "
                 "for `x0` of shape (5,)", id="longer"),
    pytest.param(np.ones((2, 3)), np.ones((3, 2)), "`x` has shape (3, 2) but this Jacobian was "
                 "prepared for `x0` of shape (2, 3)", id="transposed"),
    pytest.param(np.ones((2, 3)), np.ones((1, 6)), "`x` has shape (1, 6) but this Jacobian was "
                 "prepared for `x0` of shape (2, 3)", id="same_size_2d"),
    pytest.param(np.ones(5), 1.0, "`x` has shape () but this Jacobian was prepared for `x0` of "
                 "shape (5,)", id="scalar"),
])
@pytest.mark.parametrize("mode", ["forward", "reverse", "fd"])
def test_x_of_another_shape_than_x0_is_refused(mode, x0, x, message):
    """A later x of another shape than x0 is refused with both shapes."""
    jac = sparsejac.SparseJacobian(lambda z: np.sin(z).ravel()[1:], x0, mode=mode)
    with pytest.raises(ValueError, match=re.escape(message)):
        jac(x)


_WRONG_OUTPUTS = [
    pytest.param(lambda x: None, TypeError,
                 "`f` must return an array of numbers (or a list of them); got NoneType",
                 id="none"),
    pytest.param(lambda x: x > 0, TypeError, "`f` returned a boolean array; a Jacobian needs "
                 "numbers", id="bool_array"),
    pytest.param(lambda x: ["a", "b"], TypeError,
                 "`f` must return real numbers; it returned an array of dtype <U1",
                 id="list_of_strings"),
    # complex intermediates are traced as real pairs; a complex result is refused, naming f
    pytest.param(lambda x: x * 1j, TypeError,
                 "`f` must return real numbers; it returned an array of complex numbers",
                 id="complex"),
    pytest.param(lambda x: {"a": x}, TypeError,
                 "`f` must return an array of numbers (or a list of them); got dict",
                 id="dict"),
]


@pytest.mark.parametrize(("f", "error", "message"), _WRONG_OUTPUTS)
@pytest.mark.parametrize("entry", ["jacobian", "SparseJacobian", "ode_jacobian"])
def test_f_returning_the_wrong_type_is_refused(entry, f, error, message):
    """f returning None, booleans, strings, complex numbers or a dict is refused, naming f."""
    if entry == "ode_jacobian":  # the adapters name the user's function
        def rhs(t, y):
            return f(y)

        with pytest.raises(error, match=re.escape(message.replace("`f`", "`rhs`"))):
            sparsejac.ode_jacobian(rhs, 0.0, _X)
        return
    make = sparsejac.jacobian if entry == "jacobian" else sparsejac.SparseJacobian
    with pytest.raises(error, match=re.escape(message)):
        make(f, _X)


@pytest.mark.parametrize(("f", "message"), [
    pytest.param(lambda x: None,
                 "`f` must return an array of numbers (or a list of them); got NoneType",
                 id="none"),
    pytest.param(lambda x: np.asarray(x) > 0, "`f` returned a boolean array; a Jacobian needs "
                 "numbers", id="bool_array"),
    pytest.param(lambda x: ["a", "b", "c", "d", "e"],
                 "`f` must return real numbers; it returned an array of dtype <U1",
                 id="list_of_strings"),
    pytest.param(lambda x: np.asarray(x) * 1j,
                 "`f` must return real numbers; it returned an array of complex numbers",
                 id="complex"),
])
def test_black_box_f_returning_the_wrong_type_is_refused(f, message):
    """In ``mode="fd"`` with a given sparsity (no trace), a wrong output type is still named
    (at preparation, where f(x0) is evaluated once to check the pattern's shape)."""
    with pytest.raises(TypeError, match=re.escape(message)):
        sparsejac.SparseJacobian(f, _X, mode="fd", sparsity=np.eye(5))


@pytest.mark.parametrize("mode", ["forward", "reverse", "fd"])
def test_f_output_size_must_match_sparsity(mode):
    """f's output size must equal the rows of a given ``sparsity``; both sizes are shown."""
    with pytest.raises(ValueError, match=r"`sparsity` has shape \(4, 5\) but|returned 5 values"):
        sparsejac.jacobian(np.sin, _X, sparsity=np.ones((4, 5)), mode=mode)


def test_black_box_output_size_change_is_refused():
    """A black-box f whose output size changes between evaluations is refused, naming f."""
    def f(x):
        return x if x[0] < 1.0 else x[1:]

    jac = sparsejac.SparseJacobian(f, _X, mode="fd", sparsity=np.eye(5))
    with pytest.raises(ValueError, match=r"`f` returned 4 values \(shape \(4,\)\); expected 5"):
        jac(np.full(5, 2.0))


@pytest.mark.parametrize(("kwargs", "error", "message"), [
    pytest.param({"mode": "fwd"}, ValueError, "Unknown `mode` 'fwd'; expected one of ['auto', "
                 "'forward', 'reverse', 'mixed', 'fd'].", id="mode"),
    pytest.param({"mode": None}, ValueError, "Unknown `mode` None; expected one of",
                 id="mode_none"),
    pytest.param({"mode": "fd", "fd_method": "5-point"}, ValueError, "Unknown `fd_method` "
                 "'5-point'; expected one of ['2-point', '3-point', 'cs'].", id="fd_method"),
    pytest.param({"fd_method": "central"}, ValueError, "Unknown `fd_method` 'central'",
                 id="fd_method_any_mode"),
    pytest.param({"order": "bogus"}, ValueError, "Unknown `order` 'bogus'; expected one of [",
                 id="order"),
    pytest.param({"order": 3}, TypeError, "`order` must be a string or a callable; got int.",
                 id="order_int"),
])
@pytest.mark.parametrize("entry", ["jacobian", "SparseJacobian", "ode_jacobian"])
def test_unknown_options_are_refused(entry, kwargs, error, message):
    """Unknown mode, fd_method or order: an error naming the argument and the choices."""
    calls = {
        "ode_jacobian": lambda: sparsejac.ode_jacobian(lambda t, y: _f(y), 0.0, _X, **kwargs),
        "jacobian": lambda: sparsejac.jacobian(_f, _X, **kwargs),
        "SparseJacobian": lambda: sparsejac.SparseJacobian(_f, _X, **kwargs),
    }
    with pytest.raises(error, match=re.escape(message)):
        calls[entry]()


def test_f_not_callable_is_refused():
    """A non-callable f is a TypeError naming ``f``."""
    with pytest.raises(TypeError, match=re.escape("`f` must be callable; got ndarray")):
        sparsejac.SparseJacobian(np.ones(3), _X)


def test_unsupported_numpy_call_names_the_function_and_the_fd_way_out():
    """A numpy function without rules raises UnsupportedPrimitiveError suggesting mode='fd'."""
    with pytest.raises(UnsupportedPrimitiveError, match=r"numpy\.nanmedian .*mode='fd'"):
        sparsejac.jacobian(lambda x: np.nanmedian(x) * x, _X)


# ---------------------------------------------------------------------------------------------
# exceptions raised inside f propagate unchanged
# ---------------------------------------------------------------------------------------------


class _Boom(Exception):
    pass


@pytest.mark.parametrize("where", [
    "jacobian", "jacobian_fd", "prepare", "prepare_fd_traced", "call_fd", "call_retraced",
    "ode_jacobian", "call_after_new_args",
])
def test_exceptions_inside_f_propagate_unchanged(where):
    """An exception raised by f reaches the caller as the very same object."""
    err = _Boom("raised by f")
    armed = {"on": True}

    def f(x, *args):
        if armed["on"]:
            raise err
        return x**2

    def branchy(x):
        if x[0] > 0 and armed["on"]:
            raise err
        return x**2

    def call():
        match where:
            case "jacobian":
                sparsejac.jacobian(f, _X)
            case "jacobian_fd":
                sparsejac.jacobian(f, _X, mode="fd", sparsity=np.eye(5))
            case "prepare":
                sparsejac.SparseJacobian(f, _X)
            case "prepare_fd_traced":
                sparsejac.SparseJacobian(f, _X, mode="fd")
            case "call_fd":
                jac = sparsejac.SparseJacobian(f, _X, mode="fd", sparsity=np.eye(5))
                jac(_X)
            case "call_retraced":
                jac = sparsejac.SparseJacobian(branchy, -_X, sparsity=np.eye(5))
                jac(_X)
            case "ode_jacobian":
                sparsejac.ode_jacobian(lambda t, y: f(y), 0.0, _X)
            case "call_after_new_args":
                armed["on"] = False
                jac = sparsejac.SparseJacobian(f, _X, args=(1,))
                armed["on"] = True
                jac(_X, 2)

    with pytest.raises(_Boom) as info:
        call()
    assert info.value is err


def test_all_public_names_are_documented_with_examples():
    """Every public Jacobian entry point has a numpydoc Examples section (doctested)."""
    for obj in (sparsejac.jacobian, sparsejac.SparseJacobian, sparsejac.ode_jacobian,
                sparsejac.least_squares_jacobian, sparsejac.root_jacobian):
        assert "Examples\n    --------" in (obj.__doc__ or ""), obj.__name__


def test_catalogue_is_not_empty():
    """The scenario catalogue feeds these tests (guards against an accidental empty import)."""
    assert len(SCENARIOS) >= 15


def test_time_budget_defaults_and_overrides(rng):
    """A prepared Jacobian's search effort scales with the pattern; a time budget is an opt-in
    limit; a one-off jacobian() searches no longer than its greedy passes (still exact)."""
    s = by_name("arrowhead")
    given = sparsejac.SparseJacobian(s.f, s.x0, time_budget=0.25)
    assert given.stats()["coloring_budget"] == sparsejac.coloring.budget.prepared_effort(
        given.sparsity.nnz)
    x = random_point(s, rng)
    np.testing.assert_allclose(sparsejac.jacobian(s.f, x).toarray(), s.jacobian(x), rtol=1e-12,
                               atol=1e-12)
    with pytest.raises(ValueError, match="time_budget"):
        sparsejac.jacobian(s.f, x, time_budget=-1.0)


def _tridiagonal_plus(x, dense_column):
    """Tridiagonal + a dense last row (+ a dense column 0 if asked), as examples/mixed_mode.py."""
    y = x**2 - 2.0 * x + (x[0] * np.sin(x) if dense_column else 0.0)
    y[1:] += x[:-1]
    y[:-1] += x[1:]
    y[-1] = np.sum(x**2)
    return y


def _tridiagonal_plus_row(x, r, dense_column):
    """Row ``r`` of the Jacobian of :func:`_tridiagonal_plus`, derived by hand."""
    n = x.size
    row = np.zeros(n)
    if r == n - 1:  # the dense row: d sum(x**2)
        return 2 * x
    row[r] = 2 * x[r] - 2.0 + (x[0] * np.cos(x[r]) if dense_column else 0.0)
    if r > 0:
        row[r - 1] = 1.0
    row[r + 1] = 1.0
    if dense_column:
        row[0] += np.sin(x[r])
    return row


@pytest.mark.parametrize(("dense_column", "modes", "most"),
                         [pytest.param(False, {"reverse", "mixed"}, 4, id="dense_row"),
                          pytest.param(True, {"mixed"}, 6, id="dense_row_and_column")])
def test_auto_at_n_16000_with_default_settings(dense_column, modes, most, rng):
    """Banded + dense row, n=16,000: auto picks reverse or mixed, <= 4 products; with a dense
    column too: mixed, <= 6 products. Default settings (adaptive search budget, calibration);
    the Jacobian is checked on a slice of rows against the hand-derived one."""
    n = 16_000
    f = functools.partial(_tridiagonal_plus, dense_column=dense_column)
    jac = sparsejac.SparseJacobian(f, rng.uniform(0.5, 1.5, n))
    assert jac.mode in modes
    assert jac.mode == expected_auto_mode(jac.stats(), DEFAULT_REVERSE_COST)
    assert jac.n_products <= most
    x = rng.uniform(0.5, 1.5, n)
    got = jac(x)
    rows = np.r_[0:3, n // 2 - 1:n // 2 + 2, n - 3:n]
    want_rows = np.stack([_tridiagonal_plus_row(x, r, dense_column) for r in rows])
    np.testing.assert_allclose(got[rows].toarray(), want_rows, rtol=1e-13, atol=1e-13)


# ---------------------------------------------------------------------------------------------
# reproducible: the same f, x0 and options give the same pattern, colouring and mode
# ---------------------------------------------------------------------------------------------


def _forward_leaning(x):
    return x[1:] ** 2 - 2.5 * x[:-1]


def _mixed_leaning(x):
    return _tridiagonal_plus(x, dense_column=True)


def _preparation(f, x0):
    jac = sparsejac.SparseJacobian(f, x0)
    st = jac.stats()
    groups = {m: (None if c.column_groups is None else c.column_groups.tolist(),
                  None if c.row_groups is None else c.row_groups.tolist())
              for m, c in jac.plan.colorings.items()}
    return jac.mode, st["colors"], st["products"], groups


def _fake_clock(step):
    ticks = itertools.count()
    return lambda: 1e4 + step * next(ticks)


@pytest.mark.parametrize("f", [_forward_leaning, _dense_row, _mixed_leaning],
                         ids=["forward_leaning", "reverse_leaning", "mixed_leaning"])
def test_same_modes_and_colourings_under_any_clock(f, monkeypatch):
    """A clock reporting a very fast or a very slow machine changes neither the mode nor any
    colouring of a preparation (nothing is timed by default)."""
    x0 = np.linspace(0.5, 1.5, 300)
    real = _preparation(f, x0)
    for step in (1e-9, 10.0):
        monkeypatch.setattr(time, "perf_counter", _fake_clock(step))
        assert _preparation(f, x0) == real
        monkeypatch.undo()


def test_thirty_preparations_under_load_choose_one_mode():
    """30 preparations of x[1:]**2 - 2.5*x[:-1] at n=2,000, with a busy thread loading the
    process, all choose the same mode and colouring."""
    stop = threading.Event()

    def busy():
        a = np.random.default_rng(0).normal(size=(200, 200))
        while not stop.is_set():
            a = a @ a.T / np.linalg.norm(a)

    loaders = [threading.Thread(target=busy, daemon=True) for _ in range(2)]
    for t in loaders:
        t.start()
    try:
        x0 = np.linspace(0.5, 1.5, 2000)
        seen = {(p[0], str(p[1])) for p in (_preparation(_forward_leaning, x0) for _ in range(30))}
    finally:
        stop.set()
    assert len(seen) == 1, seen


def test_jacobian_accepts_args_kwargs_and_reverse_cost(rng):
    """jacobian() takes the same args / kwargs / reverse_cost as SparseJacobian."""
    def f(x, a, *, b):
        return a * x[1:] ** 2 - b * x[:-1]

    x = rng.uniform(0.5, 1.5, 6)
    want = sparsejac.SparseJacobian(f, x, args=(2.0,), kwargs={"b": 3.0}, reverse_cost=0.5)(x)
    got = sparsejac.jacobian(f, x, args=(2.0,), kwargs={"b": 3.0}, reverse_cost=0.5)
    np.testing.assert_array_equal(got.toarray(), want.toarray())
    hand = np.zeros((5, 6))
    hand[np.arange(5), np.arange(1, 6)] = 4.0 * x[1:]
    hand[np.arange(5), np.arange(5)] = -3.0
    np.testing.assert_allclose(got.toarray(), hand, rtol=1e-14)


def test_jacobian_honours_the_compressed_size_limit(monkeypatch):
    """A one-off Jacobian refuses a mode whose compressed block is too large, as a prepared one
    does (MemoryError naming the mode and the way out)."""
    monkeypatch.setattr(sparsejac.validation, "MAX_COMPRESSED_ENTRIES", 50)
    with pytest.raises(MemoryError, match="mode='forward' would allocate"):
        sparsejac.jacobian(_dense_row, np.ones(20), mode="forward")
    with pytest.raises(MemoryError, match="mode='forward' would allocate"):
        sparsejac.SparseJacobian(_dense_row, np.ones(20), mode="forward")(np.ones(20))


def test_one_source_for_the_version_and_typed_package():
    """The installed metadata's version is sparsejac.__version__, and py.typed ships."""
    import importlib.metadata
    from pathlib import Path

    assert importlib.metadata.version("sparsejac-numpy") == sparsejac.__version__
    assert (Path(sparsejac.__file__).parent / "py.typed").is_file()
    text = (Path(__file__).resolve().parent.parent / "pyproject.toml").read_text()
    assert 'dynamic = ["version"]' in text
    assert "\nversion =" not in text.split("[tool.setuptools.dynamic]")[0]


def test_a_networkx_strategy_as_order_with_mode_auto():
    """A networkx strategy orders one intersection graph: mode='auto' compares the one-sided
    colourings with it (mixed mode is forward mode's colouring) instead of raising that
    'partition' must be column or row, an argument SparseJacobian does not take. Oracle:
    the one-off Jacobian; validity against networkx's own greedy colouring count."""
    nx = pytest.importorskip("networkx")
    f = lambda x: x[1:] ** 2 - x[:-1]  # noqa: E731
    jac = sparsejac.SparseJacobian(f, np.ones(5), order=nx.coloring.strategy_largest_first)
    x = np.arange(1.0, 6.0)
    np.testing.assert_array_equal(jac(x).toarray(), sparsejac.jacobian(f, x).toarray())
    assert jac.stats()["colors"]["mixed"] == jac.stats()["colors"]["forward"]
