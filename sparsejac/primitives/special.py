"""``scipy.special`` functions that are Python code, not ufuncs: traced as composites.

``logsumexp``, ``softmax``, ``log_softmax``, ``polygamma``, ``zeta`` and ``multigammaln``
convert their inputs with ``np.asarray``, so they are intercepted while a trace runs
(:func:`~sparsejac.primitives.core.register_library`) and re-implemented here with supported
calls, following scipy's own algorithm (the max-shifted sums of ``_logsumexp.py``, the zeta
formula of ``polygamma``), so the values agree with scipy's to rounding and the derivatives
are exact. The scipy ufuncs (``iv``, ``gammainc``, ``betainc``, ...) are rows of
:mod:`sparsejac.primitives.elementwise`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.special as sc

from sparsejac.errors import UnsupportedPrimitiveError
from sparsejac.primitives import elementwise as ew
from sparsejac.primitives import partials as dp
from sparsejac.primitives.core import bind, register_library
from sparsejac.primitives.partials import POSITIVE
from sparsejac.tracing.tracer import Tracer, concretize

__all__ = ["HURWITZ_ZETA"]


def _axes(a: Any, axis: Any) -> tuple[int, ...]:
    nd = np.ndim(a)
    if axis is None:
        return tuple(range(nd))
    axes = (axis,) if np.ndim(axis) == 0 else tuple(axis)
    return tuple(int(x) % nd for x in axes)


def _squeeze(a: Any, axes: tuple[int, ...], keepdims: bool) -> Any:
    return a if keepdims else np.squeeze(a, axis=axes)


#: ``x`` with a zero derivative (the value itself): a constant shift of a log-sum-exp.
STOP_GRADIENT = ew.Elementwise(np.positive, (None,), zero_derivative=True, name="stop_gradient")


def _stop(x: Any) -> Any:
    return bind(STOP_GRADIENT, (x,), {}) if isinstance(x, Tracer) else x


@register_library(sc.logsumexp, name="scipy.special.logsumexp", family="reductions",
                  via="composite: max, exp, sum, log1p",
                  note="real `a` and `b` (both may be traced), `return_sign`")
def _logsumexp(a: Any, axis: Any = None, b: Any = None, keepdims: bool = False,
               return_sign: bool = False) -> Any:
    if b is not None:
        a, b = np.broadcast_arrays(a, b)
    if np.ndim(a) == 0:
        a = np.reshape(a, (1,))
        b = None if b is None else np.reshape(b, (1,))
    axes = _axes(a, axis)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        a_g = a  # (the derivative's exponents below: a zero weight's own, where it is finite)
        if b is not None:
            a = np.where(b == 0, -np.inf, a)
            a_g = np.where((b == 0) & np.isfinite(a_g), a_g, a)
        # scipy's _logsumexp: the maximum is separated out of the sum, for precision
        a_max = np.max(a, axis=axes, keepdims=True)
        i_max = a == a_max
        rest = np.where(i_max, -np.inf, a)
        weights = i_max.astype(np.float64)
        m = np.sum(weights if b is None else b * weights, axis=axes, keepdims=True)
        e = np.exp(rest - a_max)
        s = np.sum(e if b is None else b * e, axis=axes, keepdims=True)
        s = np.where(s == 0, s, s / m)
        sgn = np.sign(s + 1) * np.sign(m)
        s = np.where(s < -1, -s - 2, s)
        out = np.log1p(s) + np.log(np.abs(m)) + a_max
        # The value above is scipy's, bit for bit, but its derivative sends a tied maximum's
        # share to one of the tied entries (np.max's choice). The derivative is taken instead
        # from g - g, zero in value, where g is the log-sum-exp shifted by a constant: its
        # derivative is the softmax weights (times b), ties or not.
        c = _stop(a_max)
        c = np.where(np.isfinite(c), c, 0.0)
        e_all = np.exp(a_g - c)  # d/db_j = e^(a_j - c) / sum, also where b_j == 0
        g = np.log(np.abs(np.sum(e_all if b is None else b * e_all, axis=axes, keepdims=True)))
        out = _stop(out) + np.where(np.isfinite(g), g - _stop(g), 0.0)
        if not return_sign:
            out = np.where(sgn < 0, np.nan, out)
    out = _squeeze(out, axes, keepdims)
    if return_sign:
        return out, _squeeze(sgn, axes, keepdims)
    return out


@register_library(sc.softmax, name="scipy.special.softmax", family="reductions",
                  via="composite: max, exp, sum, divide")
def _softmax(x: Any, axis: Any = None) -> Any:
    axes = _axes(x, axis)
    x_max = np.max(x, axis=axes, keepdims=True)
    e = np.exp(x - x_max)
    return e / np.sum(e, axis=axes, keepdims=True)


@register_library(sc.log_softmax, name="scipy.special.log_softmax", family="reductions",
                  via="composite: max, exp, sum, log")
def _log_softmax(x: Any, axis: Any = None) -> Any:
    axes = _axes(x, axis)
    x_max = np.max(x, axis=axes, keepdims=True)
    x_max = np.where(np.isfinite(x_max), x_max, 0.0)
    tmp = x - x_max
    with np.errstate(divide="ignore"):
        out = np.log(np.sum(np.exp(tmp), axis=axes, keepdims=True))
    return tmp - out


# -- zeta, polygamma, multigammaln ------------------------------------------------------------

#: Hurwitz zeta ζ(s, q): d/dq = -s ζ(s + 1, q); the exponent s is refused when traced.
HURWITZ_ZETA = ew.Elementwise(sc._ufuncs._zeta, (None, dp.hurwitz_zeta_q), domain=POSITIVE,
                              name="zeta")
ew.ELEMENTWISE["zeta"] = HURWITZ_ZETA
_NO_CLOSED_FORM = "the derivative with respect to the exponent has no closed form"


@register_library(sc.zeta, name="scipy.special.zeta", family="elementwise", via="zeta",
                  note="Hurwitz ζ(x, q) with `q` traced; `x` constant")
def _zeta(x: Any, q: Any = None, out: Any = None) -> Any:
    if out is not None:
        raise UnsupportedPrimitiveError("scipy.special.zeta", "the `out=` argument")
    ew.refuse_traced("scipy.special.zeta", (x,), (("x", _NO_CLOSED_FORM),))
    if q is None:  # Riemann zeta of a parameter: no derivative with respect to x
        return bind(HURWITZ_ZETA, (x, 1.0))
    return bind(HURWITZ_ZETA, (x, q))


@register_library(sc.polygamma, name="scipy.special.polygamma", family="elementwise",
                  via="composite: digamma, zeta", note="integer order `n` constant")
def _polygamma(n: Any, x: Any) -> Any:
    ew.refuse_traced("scipy.special.polygamma", (n,), (("n", "an integer order"),))
    n = np.asarray(concretize(n, "the order of scipy.special.polygamma"))
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        fac2 = (-1.0) ** (n + 1) * sc.gamma(n + 1.0) * sc.zeta(n + 1, x)
        return np.where(n == 0, sc.psi(x), fac2)


@register_library(sc.multigammaln, name="scipy.special.multigammaln", family="elementwise",
                  via="composite: gammaln, sum",
                  note="constant `d`; the domain check a > (d-1)/2 is made at the trace point")
def _multigammaln(a: Any, d: Any) -> Any:
    ew.refuse_traced("scipy.special.multigammaln", (None, d), (None, ("d", "a dimension")))
    dv = np.asarray(concretize(d, "the dimension of scipy.special.multigammaln"))
    if dv.ndim != 0 or np.floor(dv) != dv:
        raise ValueError("d should be a positive integer (dimension)")
    dim = int(dv)
    value = a._var.value if isinstance(a, Tracer) else np.asarray(a)
    if np.any(value <= 0.5 * (dim - 1)):
        raise ValueError(f"condition a ({value}) > 0.5 * (d-1) ({0.5 * (dim - 1)}) not met")
    res = (dim * (dim - 1) * 0.25) * np.log(np.pi)
    terms = np.stack([sc.gammaln(a - (j - 1.0) / 2) for j in range(1, dim + 1)])
    return res + np.sum(terms, axis=0)
