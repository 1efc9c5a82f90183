"""The partial derivatives of the elementwise operations, one named function each.

Legend: a unary partial is ``(x, out) -> d out / d x``, a binary one ``(a, b, out)`` for each
operand, ``where``'s ``(cond, a, b, out)``; each returns an array broadcastable to the output
(or a scalar). :func:`reads` declares which operands a partial reads, so that one reading only
constant operands is folded at preparation. The domains are the intervals the registry-driven
tests sample operands from. The tables that pair each ufunc with its partials are in
:mod:`sparsejac.primitives.elementwise`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import scipy.special as sc

__all__ = ["ABOVE_ONE", "NONZERO", "POSITIVE", "PROBABILITY", "REAL", "UNIT", "Partial", "reads"]

Partial = Callable[..., Any] | None
REAL = (-2.0, 2.0)
POSITIVE = (0.2, 3.0)
UNIT = (-0.9, 0.9)
ABOVE_ONE = (1.1, 3.0)
NONZERO = (0.3, 3.0)  # sampled with random signs
PROBABILITY = (0.05, 0.95)


def reads(*which: int | str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Declare which operands (indices, or ``"out"``) a partial derivative reads.

    A partial that reads only constant operands is a constant of the prepared program (e.g.
    ``d(x * 3)/dx``); undeclared partials are assumed to read everything.
    """

    def deco(fn: Callable[..., Any]) -> Callable[..., Any]:
        fn.reads = which  # type: ignore[attr-defined]
        return fn

    return deco


# unary: (x, out)


@reads()
def one(*args: Any) -> float:
    return 1.0


@reads()
def minus_one(*args: Any) -> float:
    return -1.0


def sign(x: Any, out: Any) -> Any:
    return np.sign(x)


def sqrt(x: Any, out: Any) -> Any:
    # (+ 0.0: sqrt(-0.0) is -0.0, and sqrt(-x) at 0 had +inf for its -inf derivative)
    return 0.5 / (out + 0.0)


def cbrt(x: Any, out: Any) -> Any:
    # a power, not 1 / (3 out out): differentiated again at 0 (Hessians), a product's rule
    # gives 0 * inf = 0 by the zero convention, where x ** (1/3) and sqrt give -inf
    return np.power(out, -2.0) / 3.0


def square(x: Any, out: Any) -> Any:
    return 2.0 * x


def reciprocal(x: Any, out: Any) -> Any:
    return -out * out


def exp(x: Any, out: Any) -> Any:
    return out


def exp2(x: Any, out: Any) -> Any:
    return out * np.log(2.0)


def expm1(x: Any, out: Any) -> Any:
    return np.exp(x)  # (expm1(x) + 1 lost the digits of exp(x) below 1: 0 below x = -37.4)


def log(x: Any, out: Any) -> Any:
    return 1.0 / (x + 0.0)  # (at -0.0 as at +0.0: log(-x) at 0 had +inf for its -inf)


def log2(x: Any, out: Any) -> Any:
    return 1.0 / ((x + 0.0) * np.log(2.0))


def log10(x: Any, out: Any) -> Any:
    return 1.0 / ((x + 0.0) * np.log(10.0))


def log1p(x: Any, out: Any) -> Any:
    return 1.0 / (1.0 + x)


def sin(x: Any, out: Any) -> Any:
    return np.cos(x)


def cos(x: Any, out: Any) -> Any:
    return -np.sin(x)


def tan(x: Any, out: Any) -> Any:
    return 1.0 + out * out


def arcsin(x: Any, out: Any) -> Any:
    return 1.0 / np.sqrt((1.0 - x) * (1.0 + x))  # (1 - x * x loses digits near +-1)


def arccos(x: Any, out: Any) -> Any:
    return -1.0 / np.sqrt((1.0 - x) * (1.0 + x))


def arctan(x: Any, out: Any) -> Any:
    return 1.0 / (1.0 + x * x)


def sinh(x: Any, out: Any) -> Any:
    return np.cosh(x)


def cosh(x: Any, out: Any) -> Any:
    return np.sinh(x)


def tanh(x: Any, out: Any) -> Any:
    # sech^2: 1 - tanh^2 is 0 for |x| > 19 (and loses digits well before); cosh overflows to
    # inf past 710, where sech^2 is below the smallest double anyway
    return 1.0 / np.square(np.cosh(x))


def arcsinh(x: Any, out: Any) -> Any:
    return 1.0 / np.hypot(1.0, x)  # (x * x overflowed beyond 1.3e154: 0, not 1 / x)


def arccosh(x: Any, out: Any) -> Any:
    return 1.0 / (np.sqrt(x - 1.0) * np.sqrt(x + 1.0))


def arctanh(x: Any, out: Any) -> Any:
    return 1.0 / ((1.0 - x) * (1.0 + x))


@reads()
def deg2rad(x: Any, out: Any) -> float:
    return np.pi / 180.0


@reads()
def rad2deg(x: Any, out: Any) -> float:
    return 180.0 / np.pi


# binary: (a, b, out)


@reads(1)
def b(a: Any, b: Any, out: Any) -> Any:
    return b


@reads(0)
def a(a: Any, b: Any, out: Any) -> Any:
    return a


@reads(1)
def div_a(a: Any, b: Any, out: Any) -> Any:
    # numpy's division, also for a Python float b (1.0 / 0.0 would raise ZeroDivisionError);
    # the value's division has warned already
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.divide(1.0, b)


def div_b(a: Any, b: Any, out: Any) -> Any:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.negative(np.divide(out, b))


def pow_a(a: Any, b: Any, out: Any) -> Any:
    # b * a**(b-1), with the limit 0 for b == 0 (so x**0 has derivative 0, also at x = 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        if np.ndim(b) == 0 and not _traced(b) and b != 0:
            # a constant exponent (x**2 in a loop): the same values with fewer operations,
            # which a Hessian's recorded gradient records (a**1 is a, bit for bit)
            return b * a if b == 2 else b * np.power(a, np.subtract(b, 1))
        return np.where(np.equal(b, 0), 0.0, b * np.power(a, np.subtract(b, 1)))


def pow_b(a: Any, b: Any, out: Any) -> Any:
    # out * log(a), with the limit 0 where a == 0 (0**b is flat in b for b > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(np.equal(a, 0), 0.0, out * np.log(np.where(np.equal(a, 0), 1.0, a)))


# np.maximum / np.minimum at a tie (a == b): half of each operand's derivative, the
# symmetric derivative of the kink. Sums of kinks at the same point then differentiate as
# their sum does: max(z, 0) + log1p(exp(-|z|)) (a "stable" softplus) gets 0.5 at z = 0, and
# max(x, 0) + min(x, 0) == x gets 1, consistent with abs'(0) = 0 (= max(x, -x)').


def _half_at_ties(weak: Any, a: Any, b: Any) -> Any:
    """``weak`` (``a >= b`` or ``a <= b``) as 0/1, with 0.5 where ``a == b``.

    Ties are rare: on arrays the equality is subtracted only when one occurs (traced operands,
    in a Hessian's recorded gradient, take the formula).
    """
    r = weak.astype(np.float64)  # (np.bool_ and Tracers have astype too)
    tie = np.equal(a, b)
    if not _traced(tie) and not np.any(tie):
        return r
    return r - 0.5 * tie


def _traced(v: Any) -> bool:
    return not isinstance(v, (np.ndarray, np.generic, bool, int, float))


def ge(a: Any, b: Any, out: Any) -> Any:
    # 1 where a > b, 0.5 where a == b, 0 where a < b or either is NaN
    return _half_at_ties(np.greater_equal(a, b), a, b)


def le(a: Any, b: Any, out: Any) -> Any:
    return _half_at_ties(np.less_equal(a, b), a, b)


# with halves at ties, "a > b" and "a >= b" are one partial (as are "<" and "<=")
gt = ge
lt = le


def fmax_a(a: Any, b: Any, out: Any) -> Any:
    # a where b is NaN (fmax ignores a NaN), b where a alone is NaN, else as np.maximum
    return _with_nan(ge(a, b, out), b)


def _with_nan(part: Any, b: Any) -> Any:
    """``part`` with 1 where ``b`` is NaN (the other operand is chosen)."""
    nan = np.isnan(b)
    if not _traced(nan) and not np.any(nan):
        return part
    return np.where(nan, 1.0, part)


def fmax_b(a: Any, b: Any, out: Any) -> Any:
    return 1.0 - fmax_a(a, b, out)


def fmin_a(a: Any, b: Any, out: Any) -> Any:
    return _with_nan(le(a, b, out), b)


def fmin_b(a: Any, b: Any, out: Any) -> Any:
    return 1.0 - fmin_a(a, b, out)


# local patterns: an operand is kept where it is (one of) the chosen; both at a tie


def sel_ge(a: Any, b: Any, out: Any) -> Any:
    return np.greater_equal(a, b)


def sel_le(a: Any, b: Any, out: Any) -> Any:
    return np.less_equal(a, b)


def sel_fmax_a(a: Any, b: Any, out: Any) -> Any:
    return np.greater_equal(a, b) | np.isnan(b)


def sel_fmax_b(a: Any, b: Any, out: Any) -> Any:
    return np.less_equal(a, b) | (np.isnan(a) & ~np.isnan(b))


def sel_fmin_a(a: Any, b: Any, out: Any) -> Any:
    return np.less_equal(a, b) | np.isnan(b)


def sel_fmin_b(a: Any, b: Any, out: Any) -> Any:
    return np.greater_equal(a, b) | (np.isnan(a) & ~np.isnan(b))


def arctan2_a(a: Any, b: Any, out: Any) -> Any:
    h = np.hypot(a, b)  # (b/h)/h: a * a + b * b would overflow or underflow at extreme scales
    return (b / h) / h


def arctan2_b(a: Any, b: Any, out: Any) -> Any:
    h = np.hypot(a, b)
    return -(a / h) / h


def hypot_a(a: Any, b: Any, out: Any) -> Any:
    # 0 at the origin, the convention of abs and norm (a complex modulus is a hypot too)
    zero = np.equal(out, 0)
    return np.where(zero, 0.0, a / np.where(zero, 1.0, out))


def hypot_b(a: Any, b: Any, out: Any) -> Any:
    zero = np.equal(out, 0)
    return np.where(zero, 0.0, b / np.where(zero, 1.0, out))


# the weights 1 / (1 + e^(b - a)): exp(a - out) was 1 where out rounds to a (|a| >= 1e16)
def logaddexp_a(a: Any, b: Any, out: Any) -> Any:
    return sc.expit(np.subtract(a, b))


def logaddexp_b(a: Any, b: Any, out: Any) -> Any:
    return sc.expit(np.subtract(b, a))


def logaddexp2_a(a: Any, b: Any, out: Any) -> Any:
    return sc.expit(np.subtract(a, b) * np.log(2.0))


def logaddexp2_b(a: Any, b: Any, out: Any) -> Any:
    return sc.expit(np.subtract(b, a) * np.log(2.0))


def remainder_b(a: Any, b: Any, out: Any) -> Any:
    return -np.floor_divide(a, b)


def fmod_b(a: Any, b: Any, out: Any) -> Any:
    return -np.trunc(np.true_divide(a, b))


def copysign_a(a: Any, b: Any, out: Any) -> Any:
    return np.copysign(1.0, a) * np.copysign(1.0, b)


@reads(1)
def ldexp_a(a: Any, b: Any, out: Any) -> Any:
    return np.ldexp(1.0, b)


# scipy.special (unary: (x, out); binary: (a, b, out))

TWO_OVER_SQRT_PI = 2.0 / np.sqrt(np.pi)
INV_SQRT_2PI = 1.0 / np.sqrt(2.0 * np.pi)


def erf(x: Any, out: Any) -> Any:
    return TWO_OVER_SQRT_PI * np.exp(-x * x)


def erfc(x: Any, out: Any) -> Any:
    return -TWO_OVER_SQRT_PI * np.exp(-x * x)


def erfcx(x: Any, out: Any) -> Any:
    # 2x erfcx(x) - 2/sqrt(pi) cancels for large x (2% wrong at 1e7, 0 at 1e8): there the
    # asymptotic series (2/sqrt(pi)) sum_n>=1 (-1)^n (2n-1)!! / (2x^2)^n, five terms
    big = np.greater_equal(x, 50.0)
    xb = np.where(big, x, 50.0)
    r = 1.0 / (2.0 * xb * xb)
    series = TWO_OVER_SQRT_PI * r * (-1.0 + r * (3.0 - r * (15.0 - r * (105.0 - r * 945.0))))
    return np.where(big, series, 2.0 * x * out - TWO_OVER_SQRT_PI)


def erfinv(x: Any, out: Any) -> Any:
    return 0.5 * np.sqrt(np.pi) * np.exp(out * out)


def expit(x: Any, out: Any) -> Any:
    # s(x) s(-x): s (1 - s) cancels for large x (4% wrong at 36, 0 from 37 on)
    return out * sc.expit(np.negative(x))


def logit(x: Any, out: Any) -> Any:
    return 1.0 / (x * (1.0 - x))


def log_expit(x: Any, out: Any) -> Any:
    return sc.expit(-x)


def gammaln(x: Any, out: Any) -> Any:
    return sc.digamma(x)


def gamma(x: Any, out: Any) -> Any:
    return out * sc.digamma(x)


def digamma(x: Any, out: Any) -> Any:
    return sc.polygamma(1, x)


def ndtr(x: Any, out: Any) -> Any:
    return INV_SQRT_2PI * np.exp(-0.5 * x * x)


def log_ndtr(x: Any, out: Any) -> Any:
    # phi/Phi; in the left tail sqrt(2/pi) / erfcx(-x/sqrt(2)), where exp(-x^2/2 - out)
    # subtracts two huge numbers (94% wrong at -1e8, inf at -1e10)
    left = np.less(x, 0.0)
    tail = np.sqrt(2.0 / np.pi) / sc.erfcx(np.negative(np.where(left, x, 0.0)) / np.sqrt(2.0))
    return np.where(left, tail, INV_SQRT_2PI * np.exp(-0.5 * x * x - out))


def ndtri(x: Any, out: Any) -> Any:
    return np.sqrt(2.0 * np.pi) * np.exp(0.5 * out * out)


def entr(x: Any, out: Any) -> Any:
    return -np.log(x) - 1.0


def j0(x: Any, out: Any) -> Any:
    return -sc.j1(x)


def i0(x: Any, out: Any) -> Any:
    return sc.i1(x)


def y0(x: Any, out: Any) -> Any:
    return -sc.y1(x)


def y1(x: Any, out: Any) -> Any:
    return sc.y0(x) - out / x


def j1(x: Any, out: Any) -> Any:
    # J1' = (J0 - J2) / 2: finite at x = 0 (1/2), where J0 - J1/x is 0/0
    return 0.5 * (sc.j0(x) - sc.jv(2, x))


def i1(x: Any, out: Any) -> Any:
    # I1' = (I0 + I2) / 2: finite at x = 0 (1/2), where I0 - I1/x is 0/0
    return 0.5 * (sc.i0(x) + sc.iv(2, x))


def rgamma(x: Any, out: Any) -> Any:
    # -digamma(x) / gamma(x) is 0 * inf at the poles of gamma (0, -1, -2, ...), where
    # 1/gamma has slope (-1)^k k!: for x <= 1/2 the reflection 1/gamma(x) =
    # sin(pi x) gamma(1 - x) / pi, differentiated, is smooth through them (each branch is
    # evaluated where it is finite, so that a Hessian's trace of this rule sees no NaN)
    low = np.less_equal(x, 0.5)
    xl, xh = np.where(low, x, 0.5), np.where(low, 1.0, x)
    g = sc.gamma(np.subtract(1.0, xl))
    refl = np.cos(np.multiply(np.pi, xl)) * g - np.sin(np.multiply(np.pi, xl)) * g * (
        sc.digamma(np.subtract(1.0, xl)) / np.pi)
    return np.where(low, refl, -out * sc.digamma(xh))


def erfcinv(x: Any, out: Any) -> Any:
    return -0.5 * np.sqrt(np.pi) * np.exp(out * out)


# functions of an order (v, x): the derivative in x (the order is refused when traced)


def iv_x(v: Any, x: Any, out: Any) -> Any:
    return 0.5 * (sc.iv(np.subtract(v, 1), x) + sc.iv(np.add(v, 1), x))


def ive_x(v: Any, x: Any, out: Any) -> Any:
    return 0.5 * (sc.ive(np.subtract(v, 1), x) + sc.ive(np.add(v, 1), x)) - np.sign(x) * out


def jv_x(v: Any, x: Any, out: Any) -> Any:
    return 0.5 * (sc.jv(np.subtract(v, 1), x) - sc.jv(np.add(v, 1), x))


def yn_x(n: Any, x: Any, out: Any) -> Any:
    return 0.5 * (sc.yn(np.subtract(n, 1), x) - sc.yn(np.add(n, 1), x))


def kv_x(v: Any, x: Any, out: Any) -> Any:
    return -0.5 * (sc.kv(np.subtract(v, 1), x) + sc.kv(np.add(v, 1), x))


def gammainc_x(a: Any, x: Any, out: Any) -> Any:
    # x^(a-1) e^(-x) / Gamma(a), in logs
    return np.exp(sc.xlogy(np.subtract(a, 1), x) - x - sc.gammaln(a))


def gammaincc_x(a: Any, x: Any, out: Any) -> Any:
    return -gammainc_x(a, x, out)


def log_gamma_ratio_half(a: Any) -> Any:
    """``gammaln(a + 1/2) - gammaln(a)`` without the cancellation of the difference.

    For ``a >= 20`` its asymptotic series (``log(a)/2 - 1/(8a) + 1/(192a^3) - ...``, five
    terms: 1e-17 relative at 20); below, the difference itself (gammaln(20) is 39).
    """
    big = np.greater_equal(a, 20.0)
    ab = np.where(big, a, 20.0)
    small = np.where(big, 1.0, a)
    r = 1.0 / ab
    r2 = r * r
    series = 0.5 * np.log(ab) - r * (0.125 - r2 * (1 / 192 - r2 * (1 / 640 - r2 * (
        17 / 14336 - r2 * (31 / 18432)))))
    return np.where(big, series, sc.gammaln(small + 0.5) - sc.gammaln(small))


def t_log_density(t: Any, df: Any) -> Any:
    """The log density of Student's t: digits kept at large df, the normal one at inf.

    ``gammaln((df+1)/2) - gammaln(df/2)`` loses digits as df grows (2e-4 at df = 1e12) and
    so does scipy's ``betaln(df/2, 1/2)`` (2e-10 at df = 1e6): :func:`log_gamma_ratio_half`.
    """
    finite = np.isfinite(df)
    d = np.where(finite, df, 1.0)
    log_t = log_gamma_ratio_half(0.5 * d) - 0.5 * np.log(np.pi * d) - 0.5 * (d + 1.0) * (
        np.log1p(np.square(t) / d))
    return np.where(finite, log_t, -0.5 * np.square(t) - 0.5 * np.log(2.0 * np.pi))


def stdtr_t(df: Any, t: Any, out: Any) -> Any:
    # Student's t density
    return np.exp(t_log_density(t, df))


def hurwitz_zeta_q(s: Any, q: Any, out: Any) -> Any:
    return -np.multiply(s, sc.zeta(np.add(s, 1), q))


def beta_a(a: Any, b: Any, out: Any) -> Any:
    return out * (sc.digamma(a) - sc.digamma(np.add(a, b)))


def beta_b(a: Any, b: Any, out: Any) -> Any:
    return out * (sc.digamma(b) - sc.digamma(np.add(a, b)))


def betaln_a(a: Any, b: Any, out: Any) -> Any:
    return sc.digamma(a) - sc.digamma(np.add(a, b))


def betaln_b(a: Any, b: Any, out: Any) -> Any:
    return sc.digamma(b) - sc.digamma(np.add(a, b))


def betainc_x(a: Any, b: Any, x: Any, out: Any) -> Any:
    # the beta density x^(a-1) (1-x)^(b-1) / B(a, b), in logs
    return np.exp(sc.xlogy(np.subtract(a, 1), x) + sc.xlog1py(np.subtract(b, 1), np.negative(x))
                  - sc.betaln(a, b))


def betaincc_x(a: Any, b: Any, x: Any, out: Any) -> Any:
    return -betainc_x(a, b, x, out)


def poch_z(z: Any, m: Any, out: Any) -> Any:
    return out * (sc.digamma(np.add(z, m)) - sc.digamma(z))


def poch_m(z: Any, m: Any, out: Any) -> Any:
    return out * sc.digamma(np.add(z, m))


def pdtr_m(k: Any, m: Any, out: Any) -> Any:
    # minus the Poisson probability of floor(k)
    j = np.floor(k)
    return -np.exp(sc.xlogy(j, m) - sc.gammaln(j + 1) - m)


def pdtrc_m(k: Any, m: Any, out: Any) -> Any:
    return -pdtr_m(k, m, out)


def huber_delta(d: Any, r: Any, out: Any) -> Any:
    # huber(d, r) = r**2 / 2 for |r| <= d, else d * (|r| - d / 2)
    return np.where(np.abs(r) <= d, 0.0, np.abs(r) - d)


def sel_huber_delta(d: Any, r: Any, out: Any) -> Any:
    return np.abs(r) > d


def huber_r(d: Any, r: Any, out: Any) -> Any:
    return np.where(np.abs(r) <= d, r, d * np.sign(r))


def pseudo_huber_delta(d: Any, r: Any, out: Any) -> Any:
    # d**2 (sqrt(1 + (r/d)**2) - 1) differentiated in d, written without cancellation:
    # r**4 / (h (h + d)**2) with h = hypot(d, r); |r| at d = 0 (the limit of d |r|), 0 at 0
    h = np.hypot(d, r)
    with np.errstate(divide="ignore", invalid="ignore"):
        q = r / (h + d)
        return np.where(h == 0, 0.0, q * q * np.abs(r) * (np.abs(r) / h))


def pseudo_huber_r(d: Any, r: Any, out: Any) -> Any:
    # r / sqrt(1 + (r/d)**2) = d r / hypot(d, r); 0 at d = 0, where pseudo_huber is 0
    h = np.hypot(d, r)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(h == 0, 0.0, d * (r / h))


def xlogy_a(a: Any, b: Any, out: Any) -> Any:
    return np.log(b)


def xlogy_b(a: Any, b: Any, out: Any) -> Any:
    # xlogy(0, y) is 0 for every y: its derivative in y is 0, also at y = 0 (not 0/0); only
    # there is a/b replaced, so that its own derivative in a (1/b, a Hessian's) stays exact
    # at a = 0
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(np.equal(a, 0) & np.equal(b, 0), 0.0, np.divide(a, b))


def xlog1py_a(a: Any, b: Any, out: Any) -> Any:
    return np.log1p(b)


def xlog1py_b(a: Any, b: Any, out: Any) -> Any:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(np.equal(a, 0) & np.equal(b, -1), 0.0, np.divide(a, np.add(1.0, b)))


def sel_a_zero(a: Any, b: Any, out: Any) -> Any:
    return np.equal(a, 0)


@reads(0)
def heaviside_b(a: Any, b: Any, out: Any) -> Any:
    # heaviside(x1, x2) is x2 where x1 == 0 (and constant elsewhere)
    return np.equal(a, 0).astype(np.float64)


# where(cond, a, b)


@reads(0)
def where_a(c: Any, a: Any, b: Any, out: Any) -> Any:
    return np.not_equal(c, 0).astype(np.float64)


@reads(0)
def where_b(c: Any, a: Any, b: Any, out: Any) -> Any:
    return np.equal(c, 0).astype(np.float64)


def where_sel_a(c: Any, a: Any, b: Any, out: Any) -> Any:
    return np.asarray(c, dtype=bool)


def where_sel_b(c: Any, a: Any, b: Any, out: Any) -> Any:
    return ~np.asarray(c, dtype=bool)
