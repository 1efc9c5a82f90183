"""scipy.special with traced arguments: the new rows and composites (items 7 of issue 13).

Oracles independent of the partials in sparsejac/primitives/partials.py: the complex step for
the functions scipy evaluates at complex arguments (``iv``, ``kv``, ``rgamma``), a *different*
recurrence for the Bessel functions (``J_v' = J_{v-1} - (v/z) J_v`` where the partial uses
``(J_{v-1} - J_{v+1})/2``), scipy.stats densities (boost's ``beta.pdf`` and ``t.pdf``) for the
incomplete beta and Student's t distribution function, softmax for ``logsumexp``; scipy's own
values at the edge cases of ``logsumexp`` (``b`` with zeros and signs, ``-inf`` entries).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import scipy.special as sc
import scipy.stats as st

import sparsejac
from sparsejac.tracing import trace
from tests.primitives.util import rand

X = rand((6,), 1, 0.3, 2.5)


def diag(f: Callable[[Any], Any], x: np.ndarray = X) -> np.ndarray:
    """The diagonal of an elementwise function's Jacobian (checked to be diagonal)."""
    j = sparsejac.jacobian(f, x).toarray()
    np.testing.assert_array_equal(j - np.diag(np.diag(j)), 0.0)
    return np.diag(j)


@pytest.mark.parametrize(("f", "g"), [
    pytest.param(lambda x: sc.iv(1.5, x), lambda z: sc.iv(1.5, z), id="iv"),
    pytest.param(lambda x: sc.kv(0.7, x), lambda z: sc.kv(0.7, z), id="kv"),
    pytest.param(sc.rgamma, sc.rgamma, id="rgamma"),
])
def test_complex_step(f: Any, g: Any) -> None:
    """Functions scipy evaluates at complex arguments: the complex-step derivative."""
    want = np.imag(g(X + 1e-30j)) / 1e-30
    np.testing.assert_allclose(diag(f), want, rtol=1e-13)


def test_bessel_functions_against_another_recurrence() -> None:
    """J_v' = J_{v-1} - (v/z) J_v, I_v' = I_{v-1} - (v/z) I_v, Y_n' = Y_{n-1} - (n/z) Y_n."""
    v = 1.3
    np.testing.assert_allclose(diag(lambda x: sc.jv(v, x)),
                               sc.jv(v - 1, X) - v / X * sc.jv(v, X), rtol=1e-12)
    np.testing.assert_allclose(diag(lambda x: sc.ive(v, x)),
                               sc.ive(v - 1, X) - v / X * sc.ive(v, X) - sc.ive(v, X),
                               rtol=1e-12)
    np.testing.assert_allclose(diag(lambda x: sc.yn(2, x)),
                               sc.yn(1, X) - 2 / X * sc.yn(2, X), rtol=1e-12)
    np.testing.assert_allclose(diag(sc.j1), 0.5 * (sc.j0(X) - sc.jv(2, X)), rtol=1e-12)
    np.testing.assert_allclose(diag(sc.i1), 0.5 * (sc.i0(X) + sc.iv(2, X)), rtol=1e-12)
    np.testing.assert_allclose(diag(sc.y1), 0.5 * (sc.y0(X) - sc.yv(2, X)), rtol=1e-12)
    np.testing.assert_allclose(diag(sc.y0), -sc.y1(X), rtol=1e-12)


def test_distribution_functions_against_densities() -> None:
    """d/dx betainc(a, b, x) is the beta density, d/dt stdtr(df, t) Student's t density."""
    x = X / 3
    np.testing.assert_allclose(diag(lambda t: sc.betainc(2.5, 1.5, t), x),
                               st.beta.pdf(x, 2.5, 1.5), rtol=1e-12)
    np.testing.assert_allclose(diag(lambda t: sc.betaincc(2.5, 1.5, t), x),
                               -st.beta.pdf(x, 2.5, 1.5), rtol=1e-12)
    np.testing.assert_allclose(diag(lambda t: sc.stdtr(3.5, t)), st.t.pdf(X, 3.5), rtol=1e-12)
    np.testing.assert_allclose(diag(lambda t: sc.gammainc(2.5, t)), st.gamma.pdf(X, 2.5),
                               rtol=1e-12)
    np.testing.assert_allclose(diag(lambda t: sc.gammaincc(2.5, t)), -st.gamma.pdf(X, 2.5),
                               rtol=1e-12)
    np.testing.assert_allclose(diag(sc.erfcinv, X / 3), 1.0 / (-2 / np.sqrt(np.pi) * np.exp(
        -sc.erfcinv(X / 3) ** 2)), rtol=1e-12)


def test_gamma_function_family() -> None:
    """polygamma(n, x)' = polygamma(n+1, x); zeta(s, q)' = -s zeta(s+1, q); beta, betaln."""
    np.testing.assert_allclose(diag(lambda x: sc.polygamma(2, x)), sc.polygamma(3, X),
                               rtol=1e-12)
    np.testing.assert_allclose(diag(lambda x: sc.polygamma(0, x)), sc.polygamma(1, X),
                               rtol=1e-12)
    np.testing.assert_allclose(diag(lambda x: sc.zeta(2.5, x)), -2.5 * sc.zeta(3.5, X),
                               rtol=1e-12)
    np.testing.assert_allclose(diag(lambda x: sc.multigammaln(x + 2, 3)),
                               sum(sc.digamma(X + 2 - j / 2) for j in range(3)), rtol=1e-12)
    np.testing.assert_allclose(diag(lambda x: sc.betaln(x, 1.5)),
                               sc.digamma(X) - sc.digamma(X + 1.5), rtol=1e-12)
    np.testing.assert_allclose(diag(lambda x: sc.beta(2.0, x)),
                               sc.beta(2.0, X) * (sc.digamma(X) - sc.digamma(X + 2.0)),
                               rtol=1e-12)


def test_logsumexp_softmax_and_log_softmax() -> None:
    """∇ logsumexp = softmax; J softmax = diag(s) − s sᵀ; J log_softmax = I − 1 sᵀ."""
    x = rand((5,), 2, -2.0, 3.0)
    s = np.exp(x) / np.exp(x).sum()
    np.testing.assert_allclose(sparsejac.jacobian(sc.logsumexp, x).toarray()[0], s,
                               rtol=1e-13)
    np.testing.assert_allclose(sparsejac.jacobian(sc.softmax, x).toarray(),
                               np.diag(s) - np.outer(s, s), atol=1e-15)
    np.testing.assert_allclose(sparsejac.jacobian(sc.log_softmax, x).toarray(),
                               np.eye(5) - s[None, :], atol=1e-14)
    b = np.array([1.0, 0.0, 2.0, 0.5, 0.0])  # weights: zeros drop their entries
    got = sparsejac.jacobian(lambda t: sc.logsumexp(t, b=b), x).toarray()[0]
    np.testing.assert_allclose(got, b * np.exp(x) / (b * np.exp(x)).sum(), rtol=1e-13)


@pytest.mark.parametrize(("a", "kw"), [
    (np.array([[1.0, 2.0, -np.inf], [0.5, -1.0, 3.0]]), {"axis": 1}),
    (np.array([[1.0, 2.0, 3.0], [0.5, -1.0, 3.0]]), {"b": np.array([1.0, -2.0, 0.5]),
                                                      "axis": 1, "return_sign": True}),
    (np.array([[1.0, 2.0, 3.0], [0.5, -1.0, 3.0]]), {"b": np.array([1.0, -2.0, 0.5])}),
    (np.array([[1.0, 2.0, 3.0], [3.0, 3.0, 3.0]]), {"axis": (0, 1), "keepdims": True}),
    (np.array([[1.0, 2.0, 3.0], [3.0, 3.0, 3.0]]), {"b": np.array([[0.0, 1.0, 1.0],
                                                                    [1.0, 0.0, 0.0]]),
                                                     "axis": 0}),
    (np.array(2.5), {}),
])
def test_logsumexp_values_are_scipys(a: np.ndarray, kw: dict[str, Any]) -> None:
    """Edge cases: -inf entries, signed weights (NaN or a sign), ties, zero weights, 0-d."""
    def f(x: Any) -> Any:
        out = sc.logsumexp(x, **kw)
        return np.concatenate([np.ravel(o) for o in out]) if isinstance(out, tuple) else out

    finite = np.where(np.isfinite(a), a, 0.0)
    got = trace(lambda x: f(np.where(np.isfinite(a), x, a)), finite).out.value
    want = f(a)
    np.testing.assert_allclose(np.ravel(got), np.ravel(want), rtol=1e-14, equal_nan=True)


def test_refused_arguments_name_the_function() -> None:
    """Orders and parameters without a closed-form derivative are refused, by name."""
    x = np.array([1.5, 2.5])
    for f, name, arg in [
        (lambda t: sc.polygamma(t, 2.0), "scipy.special.polygamma", "n"),
        (lambda t: sc.zeta(t, 2.0), "scipy.special.zeta", "x"),
        (lambda t: sc.zeta(t), "scipy.special.zeta", "x"),
        (lambda t: sc.multigammaln(3.0, t), "scipy.special.multigammaln", "d"),
        (lambda t: sc.betainc(t, 2.0, 0.5), "scipy.special.betainc", "a"),
    ]:
        with pytest.raises(sparsejac.UnsupportedPrimitiveError,
                           match=rf"{name} cannot differentiate .*`{arg}`"):
            sparsejac.jacobian_sparsity(f, x)


def test_orders_from_a_parameter_are_fine() -> None:
    """An order computed from a traced parameter (inactive) does not need a derivative."""
    jac = sparsejac.ode_jacobian(lambda t, y: sc.iv(t + 1.0, y), 0.5, np.array([1.0, 2.0]),
                                 format="csr")
    np.testing.assert_allclose(jac(0.5, np.array([1.0, 2.0])).toarray(), np.diag(
        0.5 * (sc.iv(0.5, [1.0, 2.0]) + sc.iv(2.5, [1.0, 2.0]))), rtol=1e-13)


def test_multigammaln_checks_its_domain_at_the_trace_point() -> None:
    """As scipy, a <= (d-1)/2 raises ValueError (checked at the trace point)."""
    with pytest.raises(ValueError, match="not met"):
        sparsejac.jacobian(lambda t: sc.multigammaln(t, 4), np.array([1.0, 2.0]))


def test_logsumexp_at_a_tied_maximum_has_the_softmax_gradient():
    """At tied maxima (all zeros, a common start) the gradient is the softmax weights (times
    b), in every mode; the value stays scipy's bit for bit. It sent the whole weight of the
    ties to one entry (the maximum's choice)."""
    np.testing.assert_allclose(sparsejac.jacobian(sc.logsumexp, np.zeros(3)).toarray(),
                               np.full((1, 3), 1 / 3), rtol=1e-15)
    for mode in ("forward", "reverse", "mixed"):
        jac = sparsejac.SparseJacobian(lambda x: sc.logsumexp(x, b=np.array([1.0, 2.0])),
                                       np.ones(2), mode=mode)
        np.testing.assert_allclose(jac(np.array([3.0, 3.0])).toarray(), [[1 / 3, 2 / 3]],
                                   rtol=1e-15)
    rows = sparsejac.jacobian(lambda x: sc.logsumexp(x.reshape(2, 2), axis=1), np.zeros(4))
    np.testing.assert_allclose(rows.toarray(), [[0.5, 0.5, 0, 0], [0, 0, 0.5, 0.5]],
                               rtol=1e-15)
    h = sparsejac.hessian(sc.logsumexp, np.zeros(3)).toarray()
    np.testing.assert_allclose(h, np.eye(3) / 3 - 1 / 9, rtol=1e-14, atol=1e-15)


def test_bessel_i1_j1_derivatives_at_zero_are_one_half():
    for fn in (sc.i1, sc.j1):
        np.testing.assert_allclose(sparsejac.jacobian(fn, np.zeros(1)).toarray(), [[0.5]])


def test_edge_points_of_special_functions():
    """logsumexp's derivative in a zero weight b_j is e^a_j / sum (it was 0); xlogy(0, y) and
    xlog1py(0, y) have derivative 0 in y also where y's own term is singular (it was 0/0)."""
    x = np.array([1.0, 2.0, 3.0, 0.0])
    jac = sparsejac.jacobian(lambda z: sc.logsumexp(z[:2], b=z[2:]), x).toarray()
    np.testing.assert_allclose(jac, [[1.0, 0.0, 1 / 3, np.e / 3]], rtol=1e-14)
    np.testing.assert_array_equal(
        sparsejac.jacobian(lambda y: sc.xlogy(np.zeros(1), y), np.zeros(1)).toarray(), [[0.0]])
    np.testing.assert_array_equal(
        sparsejac.jacobian(lambda y: sc.xlog1py(np.zeros(1), y), -np.ones(1)).toarray(),
        [[0.0]])


def test_rgamma_at_the_poles_of_gamma() -> None:
    """1/gamma has slope (-1)^k k! at x = -k (the rule was -digamma/gamma = 0 * inf: NaN);
    its curvature at 0 is 2 euler_gamma (1/gamma(x) = x + gamma x^2 + ...). Oracles: the
    closed forms; central differences of scipy's rgamma at the other points."""
    poles = np.array([0.0, -1.0, -2.0, -3.0, -6.0])
    np.testing.assert_allclose(diag(sc.rgamma, poles), [1.0, -1.0, 2.0, -6.0, 720.0],
                               rtol=1e-13)
    x = np.array([-0.7, -5.5, -0.5, 0.3, 0.5, 0.6, 2.5, 11.0])
    fd = (sc.rgamma(x + 1e-6) - sc.rgamma(x - 1e-6)) / 2e-6
    np.testing.assert_allclose(diag(sc.rgamma, x), fd, rtol=1e-7)
    h = sparsejac.hessian(lambda u: sc.rgamma(u).sum(), np.array([0.0, -1.0])).toarray()
    fd2 = [(sc.rgamma(p + 1e-4) - 2 * sc.rgamma(p) + sc.rgamma(p - 1e-4)) / 1e-8
           for p in (0.0, -1.0)]
    np.testing.assert_allclose(np.diag(h), fd2, rtol=1e-6)
    assert np.isclose(h[0, 0], 2 * np.euler_gamma, rtol=1e-13)


@pytest.mark.parametrize("df", [3.0, 1e6, 1e12, 1e300, np.inf])
def test_stdtr_slope_at_large_and_infinite_df(df: float) -> None:
    """d stdtr(df, t)/dt is the t density: at df = 1e12 the gamma-ratio form was 2e-4 off
    (cancellation; betaln 2e-10 off at 1e6), at df = inf NaN. Oracle: scipy's t.pdf (the
    normal pdf at inf)."""
    t = np.array([0.3, -1.2, 2.0, 4.0])
    want = st.norm.pdf(t) if np.isinf(df) else st.t.pdf(t, df)
    np.testing.assert_allclose(diag(lambda u: sc.stdtr(df, u), t), want, rtol=1e-11)


@pytest.mark.parametrize(("f", "x", "want"), [
    pytest.param(lambda u: sc.xlogy(u[0], u[1] + 2.0), [0.0, 0.0], [[0, 0.5], [0.5, 0]],
                 id="xlogy"),
    pytest.param(lambda u: sc.xlog1py(u[0], u[1] + 1.0), [0.0, 0.0], [[0, 0.5], [0.5, 0]],
                 id="xlog1py"),
    pytest.param(lambda u: sc.xlogy(u[0], 3.0 * u[0] + 1.0), [0.0], [[6.0]], id="xlogy-same"),
])
def test_xlogy_hessian_at_a_zero_first_argument(f: Any, x: list[float], want: Any) -> None:
    """The partial a/y of xlogy(a, y) was replaced by 0 wherever a = 0, so its derivative in
    a (the mixed second derivative 1/y) was lost: a zero Hessian. Hand-derived oracles."""
    h = sparsejac.hessian(f, np.array(x)).toarray()
    np.testing.assert_allclose(h, want, rtol=1e-13, atol=1e-15)


@pytest.mark.parametrize(("f", "x", "exact"), [
    # expit'(x) = e^-x / (1 + e^-x)^2; s (1 - s) cancelled (0 from x = 37 on)
    (sc.expit, [20.0, 36.0, 40.0, 50.0, -40.0],
     lambda x: np.exp(-np.abs(x)) / (1 + np.exp(-np.abs(x))) ** 2),
    # tanh' = sech^2; 1 - tanh^2 was 0 from |x| = 19 on
    (np.tanh, [10.0, 19.0, 25.0, -25.0], lambda x: 4 * np.exp(-2 * np.abs(x))
     / (1 + np.exp(-2 * np.abs(x))) ** 2),
    # erfcx'(x) = 2x erfcx(x) - 2/sqrt(pi) cancelled for large x (0 at 1e8): the leading
    # terms of the asymptotic series, -1/(sqrt(pi) x^2) (1 - 3/(2x^2))
    (sc.erfcx, [1e5, 1e6, 1e7, 1e8],
     lambda x: -1 / (np.sqrt(np.pi) * x ** 2) * (1 - 1.5 / x ** 2)),
    # log_ndtr'(x) = phi/Phi ~ -x - 1/x... in the left tail (was 94% wrong at -1e8, inf at
    # -1e10): the Mills-ratio series -x (1 + 1/x^2 - 2/x^4)
    (sc.log_ndtr, [-1e3, -1e6, -1e8, -1e10], lambda x: -x * (1 + 1 / x ** 2 - 2 / x ** 4)),
], ids=["expit", "tanh", "erfcx", "log_ndtr"])
def test_slopes_keep_their_digits_at_extreme_arguments(f: Any, x: list[float],
                                                       exact: Any) -> None:
    """Derivative formulas that cancel far out returned 0 or lost all digits, silently.
    Oracles: closed forms and asymptotic series independent of the rules."""
    xs = np.array(x)
    np.testing.assert_allclose(diag(f, xs), exact(xs), rtol=1e-12)


def test_huber_losses_by_hand():
    """scipy.special.huber and pseudo_huber against their hand-derived partials, at the
    threshold, at delta = 0 and r = 0, and for r much smaller than delta (no cancellation)."""
    d = np.array([1.0, 1.0, 1.0, 0.0, 0.5, 1e3])
    r = np.array([0.5, -2.0, 1.0, 1.5, 0.0, 1e-2])
    x = np.concatenate([d, r])

    def parts(fn: Any) -> tuple[np.ndarray, np.ndarray]:
        jac = sparsejac.jacobian(lambda t: fn(t[:6], t[6:]), x).toarray()
        return np.diag(jac[:, :6]), np.diag(jac[:, 6:])

    dd, dr = parts(sc.huber)
    np.testing.assert_array_equal(dd, [0.0, 1.0, 0.0, 1.5, 0.0, 0.0])  # |r| - d outside
    np.testing.assert_array_equal(dr, [0.5, -1.0, 1.0, 0.0, 0.0, 1e-2])  # r inside, d sign(r)
    dd, dr = parts(sc.pseudo_huber)
    s = np.sqrt(1.0 + (r[:3] / d[:3]) ** 2)
    np.testing.assert_allclose(dr[:3], r[:3] / s, rtol=1e-15)
    np.testing.assert_allclose(dd[:3], 2 * d[:3] * (s - 1) - r[:3] ** 2 / (s * d[:3]),
                               rtol=1e-13)
    np.testing.assert_array_equal(dd[3:5], [1.5, 0.0])  # d |r| near d = 0; 0 at r = 0
    np.testing.assert_array_equal(dr[3:5], [0.0, 0.0])
    # r << d: d**2 (sqrt(1 + t**2) - 1) = r**2/2 - r**4 / (8 d**2) + ..., so the derivative in
    # d is r**4 / (4 d**3) (1e-17 here), which the textbook formula loses to cancellation
    np.testing.assert_allclose(dd[5], r[5] ** 4 / (4 * d[5] ** 3), rtol=1e-6)
