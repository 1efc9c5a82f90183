"""scipy.stats densities and distribution functions with traced arguments.

The traced value equals scipy's on a grid that covers the support, its boundary, points outside
it and invalid parameters (NaN); derivatives against hand-derived formulas (the score of the
normal, gamma, Student t and Poisson log-likelihoods, the exponential distribution function);
refusals and unsupported distributions name the method.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import scipy.special as sc
import scipy.stats as st

import sparsejac
from sparsejac.tracing import trace

GRID = np.array([-1.5, -0.2, 0.0, 0.3, 0.8, 1.0, 1.7, 3.2])

CALLS = [
    ("norm", (), {"loc": 0.3, "scale": 1.4}),
    ("norm", (), {"scale": -1.0}),  # invalid scale: NaN
    ("expon", (), {"loc": -0.1, "scale": 0.8}),
    ("t", (2.5,), {"loc": 0.1}),
    ("gamma", (1.7,), {"scale": 0.9}),
    ("gamma", (0.6,), {}),
    ("gamma", (-1.0,), {}),  # invalid shape: NaN
    ("beta", (2.0, 0.7), {"scale": 1.5}),
    ("lognorm", (0.6,), {"loc": -0.2}),
]
METHODS = ["pdf", "logpdf", "cdf", "logcdf", "sf", "logsf"]


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize(("dist", "shapes", "kw"), CALLS)
def test_values_are_scipys(dist: str, shapes: tuple[float, ...], kw: dict[str, float],
                           method: str) -> None:
    """Inside, on the boundary of and outside the support; invalid parameters give NaN."""
    d = getattr(st, dist)

    def f(x: Any) -> Any:
        return getattr(d, method)(x, *shapes, **kw)

    got = trace(lambda x: f(x) + 0 * x, GRID).out.value
    np.testing.assert_allclose(got, f(GRID), rtol=1e-13, atol=1e-300, equal_nan=True)


@pytest.mark.parametrize("method", ["pmf", "logpmf", "cdf", "logcdf", "sf", "logsf"])
def test_poisson_values_are_scipys(method: str) -> None:
    """Integer and non-integer counts, negative counts, mu = 0 and mu < 0 (NaN)."""
    k = np.array([-1.0, 0.0, 1.0, 2.5, 3.0, 7.0])
    for mu in (0.0, 0.7, 2.4, -1.0):
        got = trace(lambda m, mu=mu: getattr(st.poisson, method)(k, m[0] + mu - 1.0),
                    np.array([1.0])).out.value
        np.testing.assert_allclose(got, getattr(st.poisson, method)(k, mu), rtol=1e-13,
                                   equal_nan=True)


def test_normal_score() -> None:
    """d logpdf / d(x, loc, scale) = (-z/s, z/s, (z² - 1)/s) with z = (x - loc)/s."""
    x, loc, s = 0.7, -0.2, 1.3

    def f(v: Any) -> Any:
        return st.norm.logpdf(v[0], loc=v[1], scale=v[2])

    z = (x - loc) / s
    np.testing.assert_allclose(sparsejac.jacobian(f, np.array([x, loc, s])).toarray()[0],
                               [-z / s, z / s, (z * z - 1) / s], rtol=1e-13)
    frozen = sparsejac.jacobian(lambda v: st.norm(v[1], v[2]).logpdf(v[0]),
                                np.array([x, loc, s])).toarray()[0]
    np.testing.assert_allclose(frozen, [-z / s, z / s, (z * z - 1) / s], rtol=1e-13)


def test_student_t_and_gamma_shape_derivatives() -> None:
    """d/d df of t.logpdf, d/da of gamma.logpdf: digamma formulas."""
    y, df = 0.8, 3.5
    got = sparsejac.jacobian(lambda v: st.t.logpdf(y, v[0]), np.array([df])).toarray()[0, 0]
    q = 1 + y * y / df
    want = (0.5 * sc.digamma((df + 1) / 2) - 0.5 * sc.digamma(df / 2) - 0.5 / df
            - 0.5 * np.log(q) + (df + 1) / 2 * y * y / (df * df * q))
    np.testing.assert_allclose(got, want, rtol=1e-12)
    x, a = 1.3, 2.2
    got = sparsejac.jacobian(lambda v: st.gamma.logpdf(x, v[0]), np.array([a])).toarray()[0, 0]
    np.testing.assert_allclose(got, np.log(x) - sc.digamma(a), rtol=1e-12)


def test_poisson_mean_derivative() -> None:
    """d logpmf / d mu = k / mu - 1; d cdf / d mu = -pmf(k); the count has none."""
    k = np.array([0, 1, 4])
    mu = np.array([0.5, 1.5, 2.5])
    got = sparsejac.jacobian(lambda m: st.poisson.logpmf(k, m), mu).toarray()
    np.testing.assert_allclose(np.diag(got), k / mu - 1, rtol=1e-13)
    got = sparsejac.jacobian(lambda m: st.poisson.cdf(k, m), mu).toarray()
    np.testing.assert_allclose(np.diag(got), -st.poisson.pmf(k, mu), rtol=1e-13)
    assert sparsejac.jacobian_sparsity(lambda v: st.poisson.pmf(v, 2.0), mu).nnz == 0


def test_exponential_cdf_in_the_scale() -> None:
    """d/ds (1 - exp(-x/s)) = -(x/s²) exp(-x/s); outside the support the derivative is 0."""
    x = np.array([-0.5, 0.4, 1.7])
    s = 1.2
    got = sparsejac.jacobian(lambda v: st.expon.cdf(x, scale=v[0]), np.array([s])).toarray()
    want = np.where(x > 0, -(x / s**2) * np.exp(-x / s), 0.0)
    np.testing.assert_allclose(got[:, 0], want, rtol=1e-13)


def test_refused_shape_parameters_and_unsupported_distributions() -> None:
    """gamma's a, beta's a and b, t's df in cdf/sf are refused; cauchy is not supported."""
    for f, name, arg in [
        (lambda v: st.gamma.cdf(1.0, v[0]), "scipy.stats.gamma.cdf", "a"),
        (lambda v: st.beta(2.0, v[0]).sf(0.3), "scipy.stats.beta.sf", "b"),
        (lambda v: st.t.logcdf(0.5, v[0]), "scipy.stats.t.logcdf", "df"),
    ]:
        with pytest.raises(sparsejac.UnsupportedPrimitiveError,
                           match=rf"{name} cannot differentiate .*`{arg}`"):
            sparsejac.jacobian_sparsity(f, np.array([1.5]))
    with pytest.raises(sparsejac.UnsupportedPrimitiveError, match=r"scipy\.stats\.cauchy\.pdf"):
        sparsejac.jacobian_sparsity(lambda v: st.cauchy.pdf(v), np.array([1.5]))


def test_methods_outside_a_trace_are_scipys() -> None:
    """The distribution methods run scipy's code outside a trace."""
    assert not st.norm.logpdf.__func__.__code__.co_filename.startswith("<sparsejac")
    np.testing.assert_allclose(st.norm.logpdf(0.3), -0.5 * 0.09 - 0.5 * np.log(2 * np.pi),
                               rtol=1e-15)


@pytest.mark.parametrize("df", [2.5, 1e6, np.inf])
def test_t_density_at_large_and_infinite_df(df: float) -> None:
    """t.pdf/logpdf at df = inf were NaN when traced (a refused trace, TraceMismatchError);
    at large df the gamma ratio lost digits. Oracles: the derivative of the normal density
    at inf (-y pdf, -y), central differences of scipy's values otherwise."""
    y = np.array([0.3, -1.2, 2.0])
    for method in ("pdf", "logpdf"):
        def f(u: Any, m: str = method) -> Any:
            return getattr(st.t, m)(u, df)

        j = np.diag(sparsejac.jacobian(f, y).toarray())
        if np.isinf(df):
            want = -y * st.norm.pdf(y) if method == "pdf" else -y
        else:
            want = (f(y + 1e-6) - f(y - 1e-6)) / 2e-6
        np.testing.assert_allclose(j, want, rtol=1e-7)


def test_list_arguments_are_arrays() -> None:
    """loc/scale/shape parameters given as lists (traced scalars among them) were a foreign
    TypeError ('>' between list and int). Oracle: central differences of scipy's values."""
    def f(u: Any) -> Any:
        return st.norm.logpdf(u[:2], loc=[u[2], 1.0], scale=(2.0, u[3])) + st.gamma.pdf(
            u[:2], [2.0, 3.0])

    x = np.array([0.1, 0.2, 0.3, 1.5])
    want = np.array([(f(x + 1e-6 * e) - f(x - 1e-6 * e)) / 2e-6 for e in np.eye(4)]).T
    np.testing.assert_allclose(sparsejac.jacobian(f, x).toarray(), want, rtol=1e-7, atol=1e-9)


def test_multivariate_normal_by_hand():
    """multivariate_normal.logpdf / pdf with traced points (and mean): gradient -P (x - mu),
    Hessian -P per point (P the precision); scipy's values to rounding; a traced or singular
    covariance is refused by name."""
    rng = np.random.default_rng(3)
    a = rng.standard_normal((4, 4))
    cov = a @ a.T + np.eye(4)
    prec = np.linalg.inv(cov)
    mu = np.array([0.5, -1.0, 0.0, 2.0])
    x = rng.standard_normal(8)

    def f(t: Any) -> Any:
        return st.multivariate_normal.logpdf(t.reshape(2, 4), mean=mu, cov=cov)

    np.testing.assert_allclose(trace(f, x).out.value, f(x), rtol=1e-14)
    dev = x.reshape(2, 4) - mu
    want = np.zeros((2, 8))
    want[0, :4], want[1, 4:] = -prec @ dev[0], -prec @ dev[1]
    np.testing.assert_allclose(sparsejac.jacobian(f, x).toarray(), want, rtol=1e-12,
                               atol=1e-14)
    hess = sparsejac.SparseHessian(lambda t: np.sum(f(t)), x)
    np.testing.assert_allclose(hess(x).toarray(), np.kron(np.eye(2), -prec), rtol=1e-12,
                               atol=1e-14)
    # frozen, pdf, and a traced mean: d/dmu = +P (x - mu)
    frozen = st.multivariate_normal(mu, cov)
    p = sparsejac.jacobian(lambda t: np.atleast_1d(frozen.pdf(t[:4])), x).toarray()
    np.testing.assert_allclose(p[0, :4], -frozen.pdf(x[:4]) * prec @ dev[0], rtol=1e-12)
    g = sparsejac.jacobian(
        lambda t: np.atleast_1d(st.multivariate_normal.logpdf(x[:4], mean=t[4:], cov=cov)),
        x).toarray()
    np.testing.assert_allclose(g[0, 4:], prec @ (x[:4] - x[4:]), rtol=1e-12)
    with pytest.raises(sparsejac.UnsupportedPrimitiveError, match="traced covariance"):
        sparsejac.jacobian(lambda t: np.atleast_1d(
            st.multivariate_normal.logpdf(t[:2], cov=np.diag(t[2:4] ** 2 + 1))), x)
    with pytest.raises(sparsejac.UnsupportedPrimitiveError, match="singular"):
        sparsejac.jacobian(lambda t: np.atleast_1d(st.multivariate_normal.logpdf(
            t[:2], cov=np.ones((2, 2)), allow_singular=True)), x)
