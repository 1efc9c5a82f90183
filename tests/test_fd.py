"""Compressed finite differences (``mode="fd"``): approximate Jacobians of black boxes.

* each scheme (2-point, 3-point, complex step) agrees with the hand-derived Jacobians of
  ``tests/scenarios.py`` within the error the scheme is documented to have (:data:`FD_TOL`);
* a black-box ``f`` (a ``scipy.special`` ufunc, ``np.searchsorted``: functions the tracer
  refuses) works
  with a given ``sparsity``;
* the steps are scipy's, and the results equal scipy's ``approx_derivative(..., sparsity=
  (structure, groups))`` for the same groups to rounding: it is the same computation.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.special
from scipy.optimize._numdiff import _compute_absolute_step, approx_derivative

import sparsejac
from sparsejac.errors import UnsupportedPrimitiveError
from sparsejac.fd import METHODS, check_method, fd_jacobian_data, fd_steps, step_eps
from tests.scenarios import by_name, random_point

#: Largest error relative to max |J| on the catalogue (x in [0.5, 1.5], modest curvature):
#: forward differences O(sqrt(eps)) ~ 1.5e-8, central O(eps^(2/3)) ~ 4e-11, complex step
#: O(eps) (no cancellation). Each bound leaves a margin of about 100x.
FD_TOL = {"2-point": 1e-6, "3-point": 1e-8, "cs": 1e-13}

#: Scenarios whose f carries complex input through (needed by "cs"); the rest of the fd tests
#: run on all of them.
CS_SCENARIOS = [
    "diffsquare", "diffcube", "banded_dense", "banded_sparse", "brusselator_roll",
    "brusselator_pad_wrap", "brusselator_slices", "arrowhead", "burgers_zeros_like",
    "laplacian_csr_array", "scatter_add_assembly", "matmul_constant", "rank3_input",
]
SCENARIOS_FD = [*CS_SCENARIOS, "sum_coupled", "matmul_gram", "reshape_transpose"]


def assert_close(actual: sp.csr_array, expected: np.ndarray, tol: float) -> None:
    """``actual`` matches ``expected`` up to ``tol`` × max |expected| (entrywise)."""
    assert isinstance(actual, sp.csr_array)
    scale = float(np.abs(expected).max())
    np.testing.assert_allclose(actual.toarray(), expected, rtol=0, atol=tol * scale)


def _cases(names):
    return [pytest.param(by_name(n), m, id=f"{n}-{m}") for n in names for m in METHODS
            if m != "cs" or n in CS_SCENARIOS]


# ---------------------------------------------------------------------------------------------
# accuracy of each scheme
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("s", "method"), _cases(SCENARIOS_FD))
def test_fd_within_the_scheme_tolerance(s, method, rng):
    """Each scheme is within its documented error of the analytic Jacobian, at new points."""
    jac = sparsejac.SparseJacobian(s.f, s.x0, mode="fd", fd_method=method)
    assert jac.mode == "fd"
    assert jac.stats()["exact"] is False
    for _ in range(2):
        x = random_point(s, rng)
        assert_close(jac(x), s.jacobian(x), FD_TOL[method])


@pytest.mark.parametrize("method", METHODS)
def test_fd_error_is_not_zero_for_curved_f(method, rng):
    """The fd results really are approximations: 2- and 3-point differ from the exact values."""
    s = by_name("diffcube")
    x = random_point(s, rng)
    err = np.abs(sparsejac.jacobian(s.f, x, mode="fd", fd_method=method).toarray()
                 - s.jacobian(x)).max()
    if method == "cs":
        assert err <= 1e-14 * np.abs(s.jacobian(x)).max()
    else:
        assert err > 0.0


def test_fd_products_are_colours_plus_base_point():
    """``n_products`` counts the evaluations of f that happen: one per colour plus the base
    point (2-point), two per colour (3-point), one per colour (complex step; its first call
    also checks two real steps against the first complex one)."""
    s = by_name("burgers_zeros_like")
    calls = {"n": 0}

    def counted(x):
        calls["n"] += 1
        return s.f(x)

    for method, per_colour, base in (("2-point", 1, 1), ("3-point", 2, 0), ("cs", 1, 0)):
        jac = sparsejac.SparseJacobian(counted, s.x0, mode="fd", fd_method=method,
                                       sparsity=s.pattern)
        calls["n"] = 0
        jac(s.x0)
        assert calls["n"] == jac.n_products + (2 if method == "cs" else 0)
        calls["n"] = 0
        jac(s.x0)
        assert jac.coloring.n_colors == 3  # tridiagonal
        assert jac.n_products == per_colour * 3 + base
        assert calls["n"] == jac.n_products
        assert f"{jac.n_products} f evaluations instead of " in repr(jac)


# ---------------------------------------------------------------------------------------------
# black boxes: functions the tracer cannot follow
# ---------------------------------------------------------------------------------------------


def _dawsn_chain(x):
    """A chain through scipy.special.dawsn (no tracing rules) and a product of neighbours."""
    return scipy.special.dawsn(x[1:]) * x[:-1]


def _dawsn_chain_jac(x):
    n = x.size
    jac = np.zeros((n - 1, n))
    i = np.arange(n - 1)
    jac[i, i] = scipy.special.dawsn(x[1:])
    jac[i, i + 1] = (1.0 - 2.0 * x[1:] * scipy.special.dawsn(x[1:])) * x[:-1]
    return jac


def _sorted_squares(x):
    """The squares of x's distinct values in ascending order (np.unique: a value-dependent
    selection)."""
    return np.unique(x) ** 2


_BLACK_BOXES = [
    pytest.param(_dawsn_chain, _dawsn_chain_jac,
                 np.eye(7, 8, dtype=bool) | np.eye(7, 8, 1, dtype=bool),
                 "scipy.special.dawsn", id="scipy_special"),
    # at ascending points with gaps far above the step, the Jacobian is diag(2 x)
    pytest.param(_sorted_squares, lambda x: np.diag(2 * x), np.eye(8, dtype=bool),
                 "numpy.unique", id="np_unique"),
]


@pytest.mark.parametrize(("f", "jac_of", "pattern", "name"), _BLACK_BOXES)
def test_black_box_is_refused_by_the_tracer(f, jac_of, pattern, name):
    """The exact modes refuse f and say to use mode='fd' with ``sparsity=``."""
    x = np.linspace(0.5, 1.5, 8)
    with pytest.raises(UnsupportedPrimitiveError, match=re.escape(name)) as info:
        sparsejac.jacobian(f, x)
    assert "mode='fd'" in str(info.value)
    assert "`sparsity=`" in str(info.value)


@pytest.mark.parametrize("method", ["2-point", "3-point"])
@pytest.mark.parametrize(("f", "jac_of", "pattern", "name"), _BLACK_BOXES)
def test_black_box_with_sparsity_works_in_fd_mode(f, jac_of, pattern, name, method, rng):
    """With ``sparsity=`` given, mode='fd' never traces f and approximates its Jacobian."""
    x0 = np.linspace(0.5, 1.5, 8)
    jac = sparsejac.SparseJacobian(f, x0, sparsity=pattern, mode="fd", fd_method=method)
    p = sparsejac.color(pattern, "column").n_colors
    assert jac.coloring.n_colors == p
    assert jac.n_products == (p + 1 if method == "2-point" else 2 * p)
    for _ in range(2):
        x = np.linspace(0.5, 1.5, 8) + rng.uniform(0.0, 0.05, 8)  # ascending, gaps > 0.09
        assert_close(jac(x), jac_of(x), FD_TOL[method])
    one_shot = sparsejac.jacobian(f, x0, sparsity=sp.csr_array(pattern), mode="fd",
                                  fd_method=method)
    assert_close(one_shot, jac_of(x0), FD_TOL[method])


def test_black_box_in_fd_mode_needs_sparsity():
    """mode='fd' without ``sparsity`` traces f to detect the pattern: a black box says why."""
    with pytest.raises(UnsupportedPrimitiveError, match=re.escape("scipy.special.dawsn")):
        sparsejac.SparseJacobian(_dawsn_chain, np.ones(8), mode="fd")


def test_complex_step_needs_f_to_keep_the_imaginary_part():
    """fd_method='cs' refuses an f that returns real values for complex input (silent zeros)."""
    def drops_imaginary(x):
        out = np.empty(x.shape)
        out[:] = np.real(x) ** 2
        return out

    jac = sparsejac.SparseJacobian(drops_imaginary, np.ones(4), mode="fd", fd_method="cs",
                                   sparsity=np.eye(4))
    with pytest.raises(TypeError, match=r"fd_method='cs' needs `f` to carry complex input"):
        jac(np.ones(4))


@pytest.mark.parametrize("f", [
    lambda x: np.abs(x) * np.roll(x, 1),      # |z|: the modulus, the step dropped
    lambda x: np.conj(x) ** 2 + x,            # conj: the step flipped
    lambda x: np.real(x) * np.exp(x),         # real: dropped, the output still complex
    lambda x: np.linalg.norm(x) * x,          # the norm takes |z|
])
def test_complex_step_that_f_does_not_carry_is_refused(f):
    """Found from outside: an f that drops or flips the imaginary part on the way (np.abs in
    an upwind flux) got silent zeros from fd_method='cs', its output being complex still.
    The first complex step is checked against real steps and the call refused."""
    x = np.array([0.3, -1.2, 0.7, 2.0, -0.4])
    with pytest.raises(ValueError, match=r"fd_method='cs' \(complex step\) differentiates"):
        sparsejac.jacobian(f, x, mode="fd", fd_method="cs")
    jac = sparsejac.SparseJacobian(f, x, mode="fd", fd_method="cs")
    with pytest.raises(ValueError, match=r"np\.abs, np\.real, np\.conj"):
        jac(x)


@pytest.mark.parametrize("f", [
    lambda x: np.maximum(x, 0.0) * 3.0 + x ** 2,   # a kink at x = 0: one side's slope
    lambda x: np.sqrt(x * x + 1.0) / (2.0 + np.cos(x)),
    lambda x: np.exp(x) * np.roll(x, 1) ** 3,
])
def test_complex_step_of_a_carrying_f_is_not_refused(f):
    """Kinks at the point itself and analytic functions pass the check."""
    for x in (np.zeros(5), np.linspace(0.5, 1.5, 5)):
        got = sparsejac.jacobian(f, x, mode="fd", fd_method="cs").toarray()
        if x[0] != 0.0:
            np.testing.assert_allclose(got, sparsejac.jacobian(f, x).toarray(), rtol=1e-13,
                                       atol=1e-13)


# ---------------------------------------------------------------------------------------------
# the same computation as scipy
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("method", METHODS)
def test_steps_follow_scipy_rule(method, rng):
    """``fd_steps`` is scipy's absolute step (rounded to x + h - x except for 'cs')."""
    x = np.concatenate([rng.normal(scale=1e3, size=20), rng.normal(size=20),
                        [0.0, -0.0, 1.0, -1.0, 1e-300, -1e300, 0.5]])
    h_scipy = _compute_absolute_step(None, x, np.zeros(1), method)
    if method != "cs":
        h_scipy = (x + h_scipy) - x  # scipy's "recompute dx as exactly representable number"
    np.testing.assert_array_equal(fd_steps(x, method), h_scipy)


@pytest.mark.parametrize("method", METHODS)
def test_steps_documented_formula(method):
    """Steps are rel · sign(x) · max(1, |x|), rel = eps^(1/2) or eps^(1/3), up to rounding."""
    x = np.array([0.0, 2.0, -4.0, 0.25, -0.25])
    rel = np.finfo(float).eps ** (1 / 3 if method == "3-point" else 1 / 2)
    expected = rel * np.array([1.0, 2.0, -4.0, 1.0, -1.0])
    np.testing.assert_allclose(fd_steps(x, method), expected, rtol=1e-10)


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("name", ["brusselator_roll", "burgers_zeros_like", "arrowhead",
                                  "scatter_add_assembly", "rank3_input"])
def test_equals_scipy_approx_derivative_with_the_same_groups(name, method, rng):
    """Values equal scipy's approx_derivative(sparsity=(structure, groups)) to ~1e-12."""
    s = by_name(name)
    x = random_point(s, rng)
    jac = sparsejac.SparseJacobian(s.f, x, mode="fd", fd_method=method)
    ours = jac(x)

    def flat(z):
        return np.asarray(s.f(z.reshape(x.shape))).ravel()

    theirs = approx_derivative(flat, x.ravel(), method=method,
                               sparsity=(sp.csc_array(jac.sparsity).astype(float),
                                         jac.coloring.column_groups))
    theirs = sp.csr_array(theirs).toarray()
    scale = np.abs(theirs).max()
    np.testing.assert_allclose(ours.toarray(), theirs, rtol=0, atol=1e-12 * scale)


@pytest.mark.parametrize("method", ["2-point", "3-point"])
@pytest.mark.parametrize("prepared", [False, True])
def test_float32_output_gets_float32_steps_as_in_scipy(method, prepared):
    """An f returning float32 gets steps sized by float32's eps, as scipy sizes them.

    float64-sized steps (1.5e-8 relative) vanish in float32 rounding: every difference was
    zero, a silently wrong all-zero Jacobian.
    """
    x = np.linspace(1.0, 3.0, 7)

    def f(z):
        return (z**2 + z[::-1]).astype(np.float32)

    pattern = np.eye(7) + np.eye(7)[::-1]
    if prepared:
        ours = sparsejac.SparseJacobian(f, x, mode="fd", sparsity=pattern, fd_method=method)(x)
    else:
        ours = sparsejac.jacobian(f, x, mode="fd", sparsity=pattern, fd_method=method)
    exact = np.diag(2 * x) + np.eye(7)[::-1]
    theirs = approx_derivative(f, x, method=method)
    np.testing.assert_allclose(theirs, exact, atol=5e-2)  # the oracle is a sane float32 FD
    np.testing.assert_allclose(ours.toarray(), exact, atol=5e-2)
    np.testing.assert_allclose(ours.toarray(), theirs, atol=2e-3)
    h_scipy = _compute_absolute_step(None, x, np.zeros(1, np.float32), method)
    np.testing.assert_allclose(fd_steps(x, method, step_eps(np.float32)), h_scipy, rtol=1e-6)


def test_equals_scipy_group_columns_result_for_its_own_groups(rng):
    """Fed scipy's own ``group_columns`` colouring, the groups are valid and results agree."""
    from scipy.optimize._numdiff import group_columns

    s = by_name("brusselator_roll")
    x = random_point(s, rng)
    groups = group_columns(s.pattern)
    c = sparsejac.color(s.pattern, "column")
    assert c.n_colors <= groups.max() + 1  # "best" order: never more than scipy's
    theirs = approx_derivative(lambda z: s.f(z.reshape(x.shape)).ravel(), x.ravel(),
                               sparsity=(s.pattern, groups))
    ours = sparsejac.jacobian(s.f, x, mode="fd", sparsity=s.pattern)
    np.testing.assert_allclose(ours.toarray(), sp.csr_array(theirs).toarray(), rtol=0,
                               atol=1e-6 * np.abs(s.jacobian(x)).max())


# ---------------------------------------------------------------------------------------------
# the low-level function
# ---------------------------------------------------------------------------------------------


def test_fd_jacobian_data_needs_a_column_colouring():
    """A row colouring cannot drive finite differences; the error says so."""
    c = sparsejac.color(np.eye(3), "row")
    with pytest.raises(ValueError, match="finite differences need a column colouring"):
        fd_jacobian_data(np.sin, np.ones(3), c, n_out=3)


def test_fd_jacobian_data_out_is_filled(rng):
    """``out=`` receives the values (CSR order of the pattern) and is returned."""
    pattern = np.eye(4, dtype=bool) | np.eye(4, k=1, dtype=bool)
    c = sparsejac.color(pattern, "column")
    out = np.empty(int(pattern.sum()))
    x = rng.uniform(0.5, 1.5, 4)
    res = fd_jacobian_data(lambda z: np.append(z[:-1] * z[1:], z[-1] ** 2), x, c, method="cs",
                           n_out=4, out=out)
    assert res is out
    expected = [x[1], x[0], x[2], x[1], x[3], x[2], 2 * x[3]]
    np.testing.assert_allclose(out, expected, rtol=1e-15)


@pytest.mark.parametrize("method", ["forward", "", None, 2])
def test_check_method_names_the_argument(method):
    """An unknown scheme is refused, naming ``fd_method`` and the choices."""
    with pytest.raises(ValueError, match=re.escape(
            f"Unknown `fd_method` {method!r}; expected one of ['2-point', '3-point', 'cs'].")):
        check_method(method)


def _powell_singular(x):
    return np.stack([x[0::4] + 10 * x[1::4], np.sqrt(5.0) * (x[2::4] - x[3::4]),
                     (x[1::4] - 2 * x[2::4]) ** 2, np.sqrt(10.0) * (x[0::4] - x[3::4]) ** 2],
                    axis=1).ravel()


def _chebyquad(x):
    y = 2 * x - 1
    t_prev, t = np.ones_like(y), y
    out = [np.mean(y)]
    for i in range(2, x.size + 1):
        t_prev, t = t, 2 * y * t - t_prev
        out.append(np.mean(t) + (1.0 / (i * i - 1) if i % 2 == 0 else 0.0))
    return np.array(out)


def test_check_accepts_complete_patterns_of_rows_whose_first_order_change_cancels():
    """check=True refused complete patterns (a dense one; the Powell singular function's own)
    where a squared residual near its zero makes the second-order remainder outweigh the
    first-order change: one-sided differences' truncation looked like a missing entry.
    A pattern that does miss an entry is still refused, naming it."""
    x0 = np.array([0.6876617211273717, 0.19093761593712275, 0.4129825523965297,
                   0.5133921460970909, 0.44450241633134224, 0.5694388571505126,
                   0.6902702298337282, 0.8650138038688788])
    sparsejac.SparseJacobian(_chebyquad, x0, mode="fd", sparsity=np.ones((8, 8)), check=True)
    x0 = np.full(4, 1e-2)
    pattern = sparsejac.jacobian_sparsity(_powell_singular, x0)
    sparsejac.SparseJacobian(_powell_singular, x0, mode="fd", sparsity=pattern, check=True)
    short = pattern.toarray()
    short[3, 0] = False
    with pytest.raises(ValueError, match=r"\(3, 0\)"):
        sparsejac.SparseJacobian(_powell_singular, np.array([0.3, 0.5, 0.7, 0.9]), mode="fd",
                                 sparsity=short, check=True)


def _sqrt_chain(x):
    """Defined only for x >= 0 (NaN below): a residual whose solution lies on the bound."""
    r = np.sqrt(x) + 0.1 * x
    r[1:] += 0.05 * x[:-1] ** 2
    return r


def _recording(f, seen):
    def g(x):
        seen.append(np.array(x, dtype=float).ravel())
        return f(x)
    return g


@pytest.mark.parametrize("method", ["2-point", "3-point"])
def test_bounded_steps_equal_scipy_and_stay_within_the_bounds(method, rng):
    """With bounds, every evaluation point lies within them and the Jacobian equals scipy's
    approx_derivative with the same bounds and groups (one-sided 3-point columns included)."""
    n = 40
    lb, ub = np.zeros(n), np.full(n, 1.0)
    ub[::7] = np.inf
    x = rng.uniform(0.0, 1.0, n)
    x[::3] = 0.0  # on the lower bound
    x[1::5] = 1.0 - 1e-7  # a hair below the upper bound (or far from an infinite one)
    x[2::11] = 1e-6  # neither side has room for a central 3-point step
    pattern = sparsejac.jacobian_sparsity(_sqrt_chain, np.ones(n))
    seen: list[np.ndarray] = []
    ours = sparsejac.jacobian(_recording(_sqrt_chain, seen), x, mode="fd", sparsity=pattern,
                              fd_method=method, bounds=(lb, ub))
    pts = np.array(seen)
    assert (pts >= lb).all()
    assert (pts <= ub).all()
    groups = sparsejac.color(pattern, "column").column_groups
    theirs = approx_derivative(_sqrt_chain, x, method=method, bounds=(lb, ub),
                               sparsity=(sp.csc_array(pattern).astype(float), groups))
    theirs = sp.csr_array(theirs).toarray()
    assert np.isfinite(ours.toarray()).all()
    np.testing.assert_allclose(ours.toarray(), theirs, rtol=1e-9, atol=1e-12)


def test_bounds_let_least_squares_solve_on_a_bound():
    """3-point differences stepped below zero, where the residual is NaN: least_squares
    failed. With the solver's bounds given, it converges to scipy's own answer."""
    from scipy.optimize import least_squares

    n = 30
    x0 = np.ones(n)
    pattern = sparsejac.jacobian_sparsity(_sqrt_chain, x0)
    ref = least_squares(_sqrt_chain, x0, jac_sparsity=pattern, bounds=(0, np.inf),
                        method="trf", jac="3-point")
    jac = sparsejac.least_squares_jacobian(_sqrt_chain, x0, mode="fd", fd_method="3-point",
                                           sparsity=pattern, bounds=(0, np.inf))
    res = least_squares(_sqrt_chain, x0, jac=jac, bounds=(0, np.inf))
    assert res.success
    assert ref.success
    np.testing.assert_allclose(res.x, ref.x, atol=1e-6)
    assert res.cost <= 10 * ref.cost + 1e-12


def _pow_chain(x):
    """Smooth on x >= 0, NaN below (the square root of a negative number times zero)."""
    r = x**2 + 0.1 * x + 0.0 * np.sqrt(x)
    r[1:] += 0.05 * x[:-1] ** 2
    return r


def test_check_probes_stay_within_the_bounds():
    """check=True at a point on the bounds: every probe stays within them (below 0, f is
    NaN and the complete pattern was refused), and a missing entry is still named."""
    seen: list[np.ndarray] = []
    x0 = np.zeros(12)
    x0[1::2] = 1.0
    pattern = sparsejac.jacobian_sparsity(_pow_chain, np.ones(12))
    sparsejac.SparseJacobian(_recording(_pow_chain, seen), x0, mode="fd", sparsity=pattern,
                             check=True, bounds=(0.0, 1.0))
    pts = np.array(seen)
    assert (pts >= 0).all()
    assert (pts <= 1).all()
    short = pattern.toarray()
    short[6, 5] = False  # 0.1 at x0 (x0[5] = 1)
    with pytest.raises(ValueError, match=r"\(6, 5\)"):
        sparsejac.SparseJacobian(_pow_chain, x0, mode="fd", sparsity=short, check=True,
                                 bounds=(0.0, 1.0))


@pytest.mark.parametrize(("bounds", "message"), [
    ((1.0, 0.0), r"lower bound must be less than its upper bound; index 0"),
    ((2.0, np.inf), r"`x0` is outside `bounds` at index 0: 1.0"),
    ("box", r"must be a pair \(lb, ub\)"),
    ((np.zeros(3), 1.0), r"`bounds` lb must be real numbers broadcastable"),
    ((0.0, [1.0, np.nan, 1.0, 1.0]), r"index 1 has \[0.0, nan\]"),
])
def test_bad_bounds_are_named(bounds, message):
    with pytest.raises((ValueError, TypeError), match=message):
        sparsejac.SparseJacobian(_sqrt_chain, np.ones(4), mode="fd", sparsity=np.eye(4),
                                 bounds=bounds)


def test_bounds_are_for_finite_differences_and_checked_at_each_call():
    from scipy.optimize import Bounds

    with pytest.raises(ValueError, match=r"`bounds` apply to mode='fd' only"):
        sparsejac.SparseJacobian(_sqrt_chain, np.ones(4), bounds=(0, 2))
    jac = sparsejac.SparseJacobian(_sqrt_chain, np.ones((2, 2)), mode="fd",
                                   sparsity=np.eye(4), bounds=Bounds(0, 2))
    with pytest.raises(ValueError, match=r"`x` is outside the `bounds`.*index 3: 3.0"):
        jac(np.array([[1.0, 1.0], [1.0, 3.0]]))
    import pickle

    again = pickle.loads(pickle.dumps(jac))
    x = np.array([[0.0, 2.0], [1.0, 0.5]])
    np.testing.assert_array_equal(again(x).toarray(), jac(x).toarray())
    assert np.isfinite(jac(x).toarray()).all()


@pytest.mark.parametrize("method", ["2-point", "3-point"])
def test_bounded_points_never_round_past_a_narrow_box(method):
    """In a box narrower than two steps, x + 2h (one-sided 3-point) and check=True's probes
    rounded one ulp past the bound: sqrt(ub - x) gave a NaN entry where scipy's is finite."""
    rng = np.random.default_rng(5)
    for _ in range(40):
        lb = rng.uniform(0.5, 2.0)
        ub = lb + rng.uniform(2e-7, 4e-6)
        x0 = np.array([lb, ub])

        def f(x, lb=lb, ub=ub):
            return np.array([np.sqrt(ub - x[0]) + np.sqrt(x[0] - lb), x[1] - np.sqrt(ub - x[1])])

        def smooth(x, lb=lb, ub=ub):  # NaN outside the box, smooth inside: check=True's probes
            return x**2 + 0.0 * np.sqrt(ub - x) + 0.0 * np.sqrt(x - lb)

        seen: list[np.ndarray] = []
        jac = sparsejac.SparseJacobian(_recording(f, seen), x0, mode="fd", fd_method=method,
                                       sparsity=np.eye(2), bounds=(lb, ub))
        got = jac(x0).toarray()
        sparsejac.SparseJacobian(_recording(smooth, seen), x0, mode="fd", fd_method=method,
                                 sparsity=np.eye(2), bounds=(lb, ub), check=True)
        pts = np.array(seen)
        assert (pts >= lb).all()
        assert (pts <= ub).all()
        assert np.isfinite(got).all()


@pytest.mark.parametrize("ulps", [1, 2, 3, 4, 8])
def test_a_box_a_few_ulps_wide_gives_finite_differences_not_nan(ulps):
    """A variable fixed by a box a few ulps wide: the one-sided 3-point step rounded to 0 and
    gave 0/0; it is a forward difference to the farther bound now (exact for a linear f)."""
    for at_upper in (False, True):
        lb = np.array([1.0, -np.inf])
        ub = lb.copy()
        ub[0] = 1.0
        for _ in range(ulps):
            ub[0] = np.nextafter(ub[0], 2.0)
        ub[1] = np.inf
        x = np.array([ub[0] if at_upper else lb[0], 0.5])

        def f(x):  # exact arithmetic in x[0]: a difference over any step is exact
            return np.array([2.0 * x[0], x[1] * np.sin(x[1])])

        for method in ("2-point", "3-point"):
            J = sparsejac.jacobian(f, x, mode="fd", sparsity=np.ones((2, 2)), fd_method=method,
                                   bounds=(lb, ub)).toarray()
            assert np.isfinite(J).all(), (ulps, at_upper, method, J)
            np.testing.assert_array_equal(J[:, 0], [2.0, 0.0])
            np.testing.assert_allclose(J[:, 1], [0.0, np.sin(0.5) + 0.5 * np.cos(0.5)],
                                       rtol=1e-6, atol=1e-9)


# -- found from outside: check=True and the complex step's self-check --------------------------


@pytest.mark.parametrize("f", [
    pytest.param(lambda x: scipy.special.dawsn(x) + np.abs(x), id="abs"),
    pytest.param(lambda x: np.maximum(x, 0.0) + 0.5 * x, id="maximum"),
])
def test_check_accepts_a_complete_pattern_at_a_kink(f):
    """A kink at x0 (np.abs, np.maximum at 0) is even in the probe: not a missing entry."""
    x0 = np.zeros(6)
    x0[::2] = 0.4  # (kinks in half the rows)
    sparsejac.SparseJacobian(f, x0, mode="fd", sparsity=np.eye(6), check=True)
    short = np.eye(6, dtype=bool)
    g = lambda x: f(x) + 0.5 * np.roll(x, 1)  # noqa: E731  (entries (i, i-1) missing)
    with pytest.raises(ValueError, match="misses"):
        sparsejac.SparseJacobian(g, x0, mode="fd", sparsity=short, check=True)


def test_check_accepts_a_complete_pattern_near_a_zero_of_f():
    """Where f is small beside its terms, the probes' residual is rounding noise, which
    does not shrink with the step: not a missing entry (an elementwise f at its zero)."""
    n = 50
    x0 = np.linspace(0.3, 1.7, n)
    c = 3 * scipy.special.dawsn(x0) - 2 * x0

    def f(x):
        return 3 * scipy.special.dawsn(x) - 2 * x - c

    for shift in (0.0, 1e-3):
        sparsejac.SparseJacobian(f, x0 + shift, mode="fd", sparsity=np.eye(n), check=True)


def test_complex_step_check_allows_for_rounding_where_f_cancels():
    """(1e8 + x)**2 - 1e16: real steps are rounding noise, the complex step is exact (as
    scipy's): the self-check does not refuse it."""
    x = np.linspace(0.5, 1.5, 4)

    def f(z):
        return (1e8 + z) ** 2 - 1e16

    jac = sparsejac.jacobian(f, x, mode="fd", fd_method="cs", sparsity=np.eye(4)).toarray()
    np.testing.assert_allclose(jac, np.diag(2e8 + 2 * x), rtol=1e-12)
    with pytest.raises(ValueError, match="differentiates this f wrongly"):  # still refused
        sparsejac.jacobian(lambda z: np.abs(z) * 3.0 + z, -x, mode="fd", fd_method="cs",
                           sparsity=np.eye(4))


def test_complex_step_check_stays_out_of_a_domain_f_refuses():
    """At x near the edge of f's domain (x >= 0), a real step of the check that leaves it
    is not taken; the complex step itself stays at x."""
    def g(z):
        if np.any(np.real(z) < 0):
            raise ValueError("g: negative input")
        return 2 * np.sqrt(z)

    xs = np.full(3, 1e-12)
    jac = sparsejac.jacobian(g, xs, mode="fd", fd_method="cs", sparsity=np.eye(3)).toarray()
    np.testing.assert_allclose(jac, approx_derivative(g, xs, method="cs"), rtol=1e-10)


def test_complex_typed_output_real_at_real_x():
    """An f written for the complex step returns a complex dtype at real x (imaginary part
    exactly 0): accepted, as scipy's cs does."""
    n = 5
    x = np.linspace(0.5, 1.5, n)

    def f(z):
        return np.exp(z + 0j) * np.roll(z, 1)

    pattern = np.eye(n, dtype=bool) | np.roll(np.eye(n, dtype=bool), 1, axis=0)
    for method in ("cs", "2-point"):
        jac = sparsejac.jacobian(f, x, mode="fd", fd_method=method, sparsity=pattern)
        np.testing.assert_allclose(jac.toarray(), approx_derivative(f, x, method="cs").real,
                                   rtol=1e-6)


def test_workers_with_an_f_that_does_not_pickle_names_workers():
    """workers=2 sends f to other processes: a lambda gets a message naming `workers` and the
    ways out, not multiprocessing's raw pickling error."""
    with pytest.raises(TypeError, match=r"workers=2: f is sent to other processes"):
        sparsejac.jacobian(lambda z: np.sin(z), np.ones(4), mode="fd", sparsity=np.eye(4),
                           workers=2)
