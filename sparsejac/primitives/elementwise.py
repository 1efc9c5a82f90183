"""Elementwise operations: ufuncs, ``where``, ``clip``, ``astype``.

Each operation is data: a row of (numpy function, partial derivative per operand, test
domain). The three rules are written once for the whole family, from the partials:

* pattern: the union of the operands' (broadcast) dependency rows; in local mode a
  *select* rule (``maximum``, ``where``, ...) keeps only the operand that is chosen;
* jvp: ``t_out = sum_k partial_k * t_k`` with the seed axis leading (plain broadcasting);
* vjp: ``ct_k = unbroadcast(partial_k * ct_out)``.

Legend for the tables below: ``partials`` has one entry per operand; an entry is a function
``(*operand_values, out) -> array`` broadcastable to the output, or ``None`` when the
derivative with respect to that operand is identically zero. ``domain`` is the interval the
registry-driven tests sample operands from.

Operations with an identically zero derivative (comparisons, ``floor``, ``sign``, ...) are in
:data:`ZERO_DERIVATIVE`: their results carry no dependencies (SCT calls them ``ops_1_to_1_z``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.special as sc

from sparsejac.errors import UnsupportedPrimitiveError
from sparsejac.numeric import mul0
from sparsejac.primitives import depsets
from sparsejac.primitives.core import (
    Deps,
    LocalJac,
    Primitive,
    bind,
    register_function,
    register_ufunc,
)
from sparsejac.tracing.program import Node

__all__ = ["ELEMENTWISE", "ZERO_DERIVATIVE", "Elementwise", "astype"]

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


def _entries(c: Any, shape: tuple[int, ...]) -> Any:
    """A partial's value as one value per output element (a scalar stays a scalar)."""
    if np.ndim(c) == 0:
        return float(c)
    return np.ascontiguousarray(np.broadcast_to(c, shape), dtype=np.float64).ravel()


def _eval_partial(part: Callable[..., Any], vals: Sequence[Any], out: Any) -> Any:
    """A partial derivative's value; its inf/nan (1/x at 0) are not the user's warnings."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        return part(*vals, out)


def _partial_values(part: Callable[..., Any], shape: tuple[int, ...], vals: Sequence[Any],
                    out: Any) -> Any:
    return _entries(_eval_partial(part, vals, out), shape)


def _constant_partial_nonzero(part: Callable[..., Any], node: Node) -> np.ndarray | None:
    """Where a partial that reads only constant operands is nonzero (None: not such a partial).

    ``x * mask`` and ``np.where(mask, a, b)`` with a constant ``mask`` are exact this way, as
    a constant matrix's zeros are in a contraction.
    """
    rd = getattr(part, "reads", None)
    if not rd or any(r == "out" or not node.inputs[r].is_const for r in rd):
        return None
    vals = [v.value for v in node.inputs]
    with np.errstate(all="ignore"):
        return np.asarray(np.asarray(part(*vals, node.out.value)) != 0)


def expand_tangent(t: np.ndarray, in_shape: tuple[int, ...], out_ndim: int) -> np.ndarray:
    """View a tangent block ``(p, *in_shape)`` so that it broadcasts against the output."""
    extra = out_ndim - len(in_shape)
    if extra <= 0:
        return t
    return t.reshape((t.shape[0],) + (1,) * extra + tuple(in_shape))


def unbroadcast(g: np.ndarray, in_shape: tuple[int, ...]) -> np.ndarray:
    """Sum a cotangent block ``(q, *out_shape)`` back to ``(q, *in_shape)``."""
    extra = g.ndim - 1 - len(in_shape)
    if extra > 0:
        g = g.sum(axis=tuple(range(1, 1 + extra)))
    axes = tuple(i + 1 for i, s in enumerate(in_shape) if s == 1 and g.shape[i + 1] != 1)
    if axes:
        g = g.sum(axis=axes, keepdims=True)
    return g


def full_block(t: np.ndarray, p: int, out_shape: tuple[int, ...]) -> np.ndarray:
    """Broadcast a (possibly smaller) tangent term to ``(p, *out_shape)``."""
    shape = (p, *out_shape)
    if t.shape == shape:
        return t
    return np.ascontiguousarray(np.broadcast_to(t, shape))


class Elementwise(Primitive):
    """An elementwise operation with broadcasting, described by its partial derivatives.

    Parameters
    ----------
    fn : callable
        The numpy function (usually a ufunc).
    partials : sequence of callable or None
        One per operand, see the module legend.
    domain : tuple of float
        Interval the registry-driven tests sample operands from.
    select : sequence of callable or None, optional
        For local patterns: per operand, ``(*vals, out) -> bool array`` saying where that
        operand is the one chosen (``maximum``, ``where``). ``None``: always used.
    zero_derivative : bool
        The derivative is identically zero.
    name : str, optional
        Defaults to ``fn.__name__``.
    """

    def __init__(
        self,
        fn: Callable[..., Any],
        partials: Sequence[Partial],
        *,
        domain: tuple[float, float] = REAL,
        select: Sequence[Callable[..., Any] | None] | None = None,
        zero_derivative: bool = False,
        name: str | None = None,
        nin: int | None = None,
    ) -> None:
        self.fn = fn
        self.name = name or fn.__name__
        self.partials = tuple(partials)
        self.nin = nin if nin is not None else len(self.partials)
        self.domain = domain
        self.select = tuple(select) if select is not None else None
        self.zero_derivative = zero_derivative

    def impl(self, *vals: Any, **params: Any) -> np.ndarray:
        """Apply the numpy function."""
        return np.asarray(self.fn(*vals, **params))

    def pattern(self, node: Node, deps: Sequence[Deps | None], local: bool) -> Deps | None:
        """Union of the operands' broadcast dependency rows (only chosen operands if local)."""
        if self.zero_derivative:
            return None
        out_shape = node.out.shape
        terms = []
        for k, (var, d) in enumerate(zip(node.inputs, deps, strict=True)):
            part = self.partials[k]
            if d is None or part is None:
                continue
            rows = depsets.broadcast_rows(var.shape, out_shape)
            dk = d if rows is None else depsets.take_rows(d, rows)
            nonzero = _constant_partial_nonzero(part, node)
            if nonzero is not None:  # zeros of a constant partial are structural zeros
                dk = depsets.keep_rows(dk, np.broadcast_to(nonzero, out_shape))
            sel = self.select[k] if self.select is not None else None
            if local and sel is not None:
                vals = [v.value for v in node.inputs]
                chosen = np.broadcast_to(sel(*vals, node.out.value), out_shape)
                dk = depsets.keep_rows(dk, chosen)
            terms.append(dk)
        return depsets.union(terms)

    def jvp(
        self, node: Node, vals: Sequence[Any], tangents: Sequence[np.ndarray | None], out: Any
    ) -> np.ndarray | None:
        """``sum_k partial_k * t_k``."""
        if self.zero_derivative:
            return None
        out_shape = node.out.shape
        acc = None
        p = 0
        for k, t in enumerate(tangents):
            part = self.partials[k]
            if t is None or part is None:
                continue
            p = t.shape[0]
            c = _eval_partial(part, vals, out)
            term = mul0(expand_tangent(t, node.inputs[k].shape, len(out_shape)), c)
            acc = term if acc is None else acc + term
        if acc is None:
            return None
        return full_block(acc, p, out_shape)

    def vjp(
        self, node: Node, vals: Sequence[Any], out: Any, ct: np.ndarray
    ) -> list[np.ndarray | None]:
        """``unbroadcast(partial_k * ct)`` for each active operand."""
        res: list[np.ndarray | None] = []
        for k, var in enumerate(node.inputs):
            part = self.partials[k]
            if not var.active or part is None or self.zero_derivative:
                res.append(None)
                continue
            c = _eval_partial(part, vals, out)
            res.append(unbroadcast(mul0(ct, c), var.shape))
        return res

    def linearize(self, node: Node) -> list[LocalJac | None] | None:
        """Diagonal (broadcast) local Jacobians valued by the partials."""
        out_shape = node.out.shape
        rows = np.arange(node.out.size, dtype=np.int64)
        res: list[LocalJac | None] = []
        for k, var in enumerate(node.inputs):
            part = self.partials[k]
            if self.zero_derivative or part is None or not var.active:
                res.append(None)
                continue
            bc = depsets.broadcast_rows(var.shape, out_shape)
            cols = rows if bc is None else bc
            rd = getattr(part, "reads", None)
            if rd is not None and all(r != "out" and node.inputs[r].is_const for r in rd):
                vals = [v.value for v in node.inputs]
                c = _entries(_eval_partial(part, vals, node.out.value), out_shape)
                if np.ndim(c):  # zeros of a constant partial are structural zeros (as in pattern)
                    keep = np.flatnonzero(c != 0)
                    res.append(LocalJac(rows[keep], cols[keep], const=c[keep]))
                else:
                    res.append(LocalJac(rows, cols, const=c) if c != 0 else None)
            else:
                res.append(LocalJac(rows, cols,
                                    dyn=functools.partial(_partial_values, part, out_shape)))
        return res


# ---------------------------------------------------------------------------------------
# partial derivatives (named functions, one line each where possible)
# ---------------------------------------------------------------------------------------
# unary: (x, out)


@reads()
def _one(*args: Any) -> float:
    return 1.0


@reads()
def _minus_one(*args: Any) -> float:
    return -1.0


def _sign(x: Any, out: Any) -> Any:
    return np.sign(x)


def _sqrt(x: Any, out: Any) -> Any:
    return 0.5 / out


def _cbrt(x: Any, out: Any) -> Any:
    return 1.0 / (3.0 * out * out)


def _square(x: Any, out: Any) -> Any:
    return 2.0 * x


def _reciprocal(x: Any, out: Any) -> Any:
    return -out * out


def _exp(x: Any, out: Any) -> Any:
    return out


def _exp2(x: Any, out: Any) -> Any:
    return out * np.log(2.0)


def _expm1(x: Any, out: Any) -> Any:
    return out + 1.0


def _log(x: Any, out: Any) -> Any:
    return 1.0 / x


def _log2(x: Any, out: Any) -> Any:
    return 1.0 / (x * np.log(2.0))


def _log10(x: Any, out: Any) -> Any:
    return 1.0 / (x * np.log(10.0))


def _log1p(x: Any, out: Any) -> Any:
    return 1.0 / (1.0 + x)


def _sin(x: Any, out: Any) -> Any:
    return np.cos(x)


def _cos(x: Any, out: Any) -> Any:
    return -np.sin(x)


def _tan(x: Any, out: Any) -> Any:
    return 1.0 + out * out


def _arcsin(x: Any, out: Any) -> Any:
    return 1.0 / np.sqrt(1.0 - x * x)


def _arccos(x: Any, out: Any) -> Any:
    return -1.0 / np.sqrt(1.0 - x * x)


def _arctan(x: Any, out: Any) -> Any:
    return 1.0 / (1.0 + x * x)


def _sinh(x: Any, out: Any) -> Any:
    return np.cosh(x)


def _cosh(x: Any, out: Any) -> Any:
    return np.sinh(x)


def _tanh(x: Any, out: Any) -> Any:
    return 1.0 - out * out


def _arcsinh(x: Any, out: Any) -> Any:
    return 1.0 / np.sqrt(x * x + 1.0)


def _arccosh(x: Any, out: Any) -> Any:
    return 1.0 / np.sqrt(x * x - 1.0)


def _arctanh(x: Any, out: Any) -> Any:
    return 1.0 / (1.0 - x * x)


@reads()
def _deg2rad(x: Any, out: Any) -> float:
    return np.pi / 180.0


@reads()
def _rad2deg(x: Any, out: Any) -> float:
    return 180.0 / np.pi


# binary: (a, b, out)


@reads(1)
def _b(a: Any, b: Any, out: Any) -> Any:
    return b


@reads(0)
def _a(a: Any, b: Any, out: Any) -> Any:
    return a


@reads(1)
def _div_a(a: Any, b: Any, out: Any) -> Any:
    return 1.0 / b


def _div_b(a: Any, b: Any, out: Any) -> Any:
    return -out / b


def _pow_a(a: Any, b: Any, out: Any) -> Any:
    # b * a**(b-1), with the limit 0 for b == 0 (so x**0 has derivative 0, also at x = 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(np.equal(b, 0), 0.0, b * np.power(a, np.subtract(b, 1)))


def _pow_b(a: Any, b: Any, out: Any) -> Any:
    # out * log(a), with the limit 0 where a == 0 (0**b is flat in b for b > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(np.equal(a, 0), 0.0, out * np.log(np.where(np.equal(a, 0), 1.0, a)))


def _ge(a: Any, b: Any, out: Any) -> Any:
    return np.greater_equal(a, b).astype(np.float64)


def _lt(a: Any, b: Any, out: Any) -> Any:
    return np.less(a, b).astype(np.float64)


def _le(a: Any, b: Any, out: Any) -> Any:
    return np.less_equal(a, b).astype(np.float64)


def _gt(a: Any, b: Any, out: Any) -> Any:
    return np.greater(a, b).astype(np.float64)


def _fmax_a(a: Any, b: Any, out: Any) -> Any:
    return (np.greater_equal(a, b) | np.isnan(b)).astype(np.float64)


def _fmax_b(a: Any, b: Any, out: Any) -> Any:
    return 1.0 - _fmax_a(a, b, out)


def _fmin_a(a: Any, b: Any, out: Any) -> Any:
    return (np.less_equal(a, b) | np.isnan(b)).astype(np.float64)


def _fmin_b(a: Any, b: Any, out: Any) -> Any:
    return 1.0 - _fmin_a(a, b, out)


def _sel_ge(a: Any, b: Any, out: Any) -> Any:
    return np.greater_equal(a, b)


def _sel_lt(a: Any, b: Any, out: Any) -> Any:
    return np.less(a, b)


def _sel_le(a: Any, b: Any, out: Any) -> Any:
    return np.less_equal(a, b)


def _sel_gt(a: Any, b: Any, out: Any) -> Any:
    return np.greater(a, b)


def _arctan2_a(a: Any, b: Any, out: Any) -> Any:
    return b / (a * a + b * b)


def _arctan2_b(a: Any, b: Any, out: Any) -> Any:
    return -a / (a * a + b * b)


def _hypot_a(a: Any, b: Any, out: Any) -> Any:
    return a / out


def _hypot_b(a: Any, b: Any, out: Any) -> Any:
    return b / out


def _logaddexp_a(a: Any, b: Any, out: Any) -> Any:
    return np.exp(np.subtract(a, out))


def _logaddexp_b(a: Any, b: Any, out: Any) -> Any:
    return np.exp(np.subtract(b, out))


def _logaddexp2_a(a: Any, b: Any, out: Any) -> Any:
    return np.exp2(np.subtract(a, out))


def _logaddexp2_b(a: Any, b: Any, out: Any) -> Any:
    return np.exp2(np.subtract(b, out))


def _remainder_b(a: Any, b: Any, out: Any) -> Any:
    return -np.floor_divide(a, b)


def _fmod_b(a: Any, b: Any, out: Any) -> Any:
    return -np.trunc(np.true_divide(a, b))


def _copysign_a(a: Any, b: Any, out: Any) -> Any:
    return np.copysign(1.0, a) * np.copysign(1.0, b)


@reads(1)
def _ldexp_a(a: Any, b: Any, out: Any) -> Any:
    return np.ldexp(1.0, b)


# scipy.special (unary: (x, out); binary: (a, b, out))

_TWO_OVER_SQRT_PI = 2.0 / np.sqrt(np.pi)
_INV_SQRT_2PI = 1.0 / np.sqrt(2.0 * np.pi)


def _erf(x: Any, out: Any) -> Any:
    return _TWO_OVER_SQRT_PI * np.exp(-x * x)


def _erfc(x: Any, out: Any) -> Any:
    return -_TWO_OVER_SQRT_PI * np.exp(-x * x)


def _erfcx(x: Any, out: Any) -> Any:
    return 2.0 * x * out - _TWO_OVER_SQRT_PI


def _erfinv(x: Any, out: Any) -> Any:
    return 0.5 * np.sqrt(np.pi) * np.exp(out * out)


def _expit(x: Any, out: Any) -> Any:
    return out * (1.0 - out)


def _logit(x: Any, out: Any) -> Any:
    return 1.0 / (x * (1.0 - x))


def _log_expit(x: Any, out: Any) -> Any:
    return sc.expit(-x)


def _gammaln(x: Any, out: Any) -> Any:
    return sc.digamma(x)


def _gamma(x: Any, out: Any) -> Any:
    return out * sc.digamma(x)


def _digamma(x: Any, out: Any) -> Any:
    return sc.polygamma(1, x)


def _ndtr(x: Any, out: Any) -> Any:
    return _INV_SQRT_2PI * np.exp(-0.5 * x * x)


def _log_ndtr(x: Any, out: Any) -> Any:
    return _INV_SQRT_2PI * np.exp(-0.5 * x * x - out)


def _ndtri(x: Any, out: Any) -> Any:
    return np.sqrt(2.0 * np.pi) * np.exp(0.5 * out * out)


def _entr(x: Any, out: Any) -> Any:
    return -np.log(x) - 1.0


def _j0(x: Any, out: Any) -> Any:
    return -sc.j1(x)


def _i0(x: Any, out: Any) -> Any:
    return sc.i1(x)


def _xlogy_a(a: Any, b: Any, out: Any) -> Any:
    return np.log(b)


def _xlogy_b(a: Any, b: Any, out: Any) -> Any:
    return a / b


def _xlog1py_a(a: Any, b: Any, out: Any) -> Any:
    return np.log1p(b)


def _xlog1py_b(a: Any, b: Any, out: Any) -> Any:
    return a / (1.0 + b)


# where(cond, a, b)


@reads(0)
def _where_a(c: Any, a: Any, b: Any, out: Any) -> Any:
    return np.asarray(c, dtype=bool).astype(np.float64)


@reads(0)
def _where_b(c: Any, a: Any, b: Any, out: Any) -> Any:
    return (~np.asarray(c, dtype=bool)).astype(np.float64)


def _where_sel_a(c: Any, a: Any, b: Any, out: Any) -> Any:
    return np.asarray(c, dtype=bool)


def _where_sel_b(c: Any, a: Any, b: Any, out: Any) -> Any:
    return ~np.asarray(c, dtype=bool)


# ---------------------------------------------------------------------------------------
# the tables
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Row:
    """One elementwise operation: ufunc, partials, domain, and optional select rules."""

    fn: np.ufunc
    partials: tuple[Partial, ...]
    domain: tuple[float, float] = REAL
    select: tuple[Callable[..., Any] | None, ...] | None = None


#: Differentiable ufuncs: (ufunc, partials, test domain[, select]).
UNARY_ROWS = [
    Row(np.negative, (_minus_one,)),
    Row(np.positive, (_one,)),
    Row(np.absolute, (_sign,), NONZERO),
    Row(np.fabs, (_sign,), NONZERO),
    Row(np.sqrt, (_sqrt,), POSITIVE),
    Row(np.cbrt, (_cbrt,), NONZERO),
    Row(np.square, (_square,)),
    Row(np.reciprocal, (_reciprocal,), NONZERO),
    Row(np.exp, (_exp,)),
    Row(np.exp2, (_exp2,)),
    Row(np.expm1, (_expm1,)),
    Row(np.log, (_log,), POSITIVE),
    Row(np.log2, (_log2,), POSITIVE),
    Row(np.log10, (_log10,), POSITIVE),
    Row(np.log1p, (_log1p,), POSITIVE),
    Row(np.sin, (_sin,)),
    Row(np.cos, (_cos,)),
    Row(np.tan, (_tan,), UNIT),
    Row(np.arcsin, (_arcsin,), UNIT),
    Row(np.arccos, (_arccos,), UNIT),
    Row(np.arctan, (_arctan,)),
    Row(np.sinh, (_sinh,)),
    Row(np.cosh, (_cosh,)),
    Row(np.tanh, (_tanh,)),
    Row(np.arcsinh, (_arcsinh,)),
    Row(np.arccosh, (_arccosh,), ABOVE_ONE),
    Row(np.arctanh, (_arctanh,), UNIT),
    Row(np.deg2rad, (_deg2rad,)),
    Row(np.rad2deg, (_rad2deg,)),
    Row(np.conjugate, (_one,)),
    # scipy.special: smooth functions that scientific residuals and right-hand sides use
    Row(sc.erf, (_erf,)),
    Row(sc.erfc, (_erfc,)),
    Row(sc.erfcx, (_erfcx,)),
    Row(sc.erfinv, (_erfinv,), UNIT),
    Row(sc.expit, (_expit,)),
    Row(sc.logit, (_logit,), PROBABILITY),
    Row(sc.log_expit, (_log_expit,)),
    Row(sc.gammaln, (_gammaln,), POSITIVE),
    Row(sc.gamma, (_gamma,), POSITIVE),
    Row(sc.digamma, (_digamma,), POSITIVE),
    Row(sc.ndtr, (_ndtr,)),
    Row(sc.log_ndtr, (_log_ndtr,)),
    Row(sc.ndtri, (_ndtri,), PROBABILITY),
    Row(sc.entr, (_entr,), POSITIVE),
    Row(sc.j0, (_j0,)),
    Row(sc.i0, (_i0,)),
]

BINARY_ROWS = [
    Row(np.add, (_one, _one)),
    Row(np.subtract, (_one, _minus_one)),
    Row(np.multiply, (_b, _a)),
    Row(np.true_divide, (_div_a, _div_b), NONZERO),
    Row(np.power, (_pow_a, _pow_b), POSITIVE),
    Row(np.float_power, (_pow_a, _pow_b), POSITIVE),
    Row(np.maximum, (_ge, _lt), REAL, (_sel_ge, _sel_lt)),
    Row(np.minimum, (_le, _gt), REAL, (_sel_le, _sel_gt)),
    Row(np.fmax, (_fmax_a, _fmax_b), REAL, (_sel_ge, _sel_lt)),
    Row(np.fmin, (_fmin_a, _fmin_b), REAL, (_sel_le, _sel_gt)),
    Row(np.arctan2, (_arctan2_a, _arctan2_b), NONZERO),
    Row(np.hypot, (_hypot_a, _hypot_b), NONZERO),
    Row(np.logaddexp, (_logaddexp_a, _logaddexp_b)),
    Row(np.logaddexp2, (_logaddexp2_a, _logaddexp2_b)),
    Row(np.remainder, (_one, _remainder_b), POSITIVE),
    Row(np.fmod, (_one, _fmod_b), POSITIVE),
    Row(np.copysign, (_copysign_a, None), NONZERO),
    Row(np.ldexp, (_ldexp_a, None)),
    Row(np.nextafter, (_one, None)),  # one ulp away from x1: d/dx1 = 1 (not zero)
    Row(sc.xlogy, (_xlogy_a, _xlogy_b), POSITIVE),
    Row(sc.xlog1py, (_xlog1py_a, _xlog1py_b), POSITIVE),
]

#: ufuncs whose derivative is identically zero (their results carry no dependencies).
ZERO_DERIVATIVE: list[np.ufunc] = [
    np.sign, np.floor, np.ceil, np.trunc, np.rint, np.signbit, np.isnan, np.isinf,
    np.isfinite, np.spacing, np.logical_not, np.invert,
    np.floor_divide, np.greater, np.greater_equal, np.less, np.less_equal, np.equal,
    np.not_equal, np.logical_and, np.logical_or, np.logical_xor, np.bitwise_and,
    np.bitwise_or, np.bitwise_xor, np.left_shift, np.right_shift, np.gcd, np.lcm,
    np.heaviside,
]

ELEMENTWISE: dict[str, Elementwise] = {}


def _make_call_handler(prim: Elementwise) -> Callable[..., Any]:
    def handler(*args: Any, **kwargs: Any) -> Any:
        if len(args) != prim.nin:
            raise TypeError(f"numpy.{prim.name} takes {prim.nin} operands, got {len(args)}")
        params = {}
        for key, val in kwargs.items():
            if key == "where" and (val is True):
                continue
            if key in ("casting", "order", "subok") or (key == "dtype" and val is None):
                continue
            if key == "dtype":
                params["dtype"] = np.dtype(val)
                continue
            raise UnsupportedPrimitiveError(
                f"numpy.{prim.name}", f"the keyword argument `{key}=` is not supported"
            )
        return bind(prim, args, params)

    return handler


def _register_rows() -> None:
    for row in UNARY_ROWS + BINARY_ROWS:
        prim = Elementwise(row.fn, row.partials, domain=row.domain, select=row.select)
        ELEMENTWISE[prim.name] = prim
        register_ufunc(row.fn, "__call__", _make_call_handler(prim), family="elementwise",
                       via=prim.name)
    for uf in ZERO_DERIVATIVE:
        prim = Elementwise(uf, (None,) * uf.nin, zero_derivative=True)
        ELEMENTWISE[prim.name] = prim
        register_ufunc(uf, "__call__", _make_call_handler(prim), family="elementwise",
                       via=f"{prim.name} (zero derivative)")


_register_rows()

# -- where -------------------------------------------------------------------------------

WHERE = Elementwise(
    np.where, (None, _where_a, _where_b), select=(None, _where_sel_a, _where_sel_b),
    name="where",
)
ELEMENTWISE["where"] = WHERE


@register_function(np.where, family="elementwise", via="where",
                   note="the one-argument form np.where(cond) is not supported (use np.nonzero "
                        "outside the traced function)")
def _where(condition: Any, x: Any = None, y: Any = None) -> Any:
    if x is None or y is None:
        raise UnsupportedPrimitiveError(
            "numpy.where", "the one-argument form returns indices whose number depends on values"
        )
    return bind(WHERE, (condition, x, y))


# -- clip: a composite of maximum and minimum -----------------------------------------------


@register_function(np.clip, family="elementwise", via="composite: maximum, minimum")
def _clip(a: Any, a_min: Any = None, a_max: Any = None, out: Any = None, **kwargs: Any) -> Any:
    a_min = kwargs.pop("min", a_min)
    a_max = kwargs.pop("max", a_max)
    if kwargs:
        raise UnsupportedPrimitiveError("numpy.clip", f"keyword arguments {sorted(kwargs)}")
    res = a
    if a_min is not None:
        res = np.maximum(res, a_min)
    if a_max is not None:
        res = np.minimum(res, a_max)
    if out is not None:
        out[...] = res
        return out
    return res


# -- dtype conversion ----------------------------------------------------------------------


class AsType(Elementwise):
    """``astype(dtype)``: identity for float targets, zero derivative for the others."""

    def __init__(self, *, zero_derivative: bool) -> None:
        super().__init__(np.asarray, (None,) if zero_derivative else (_one,), name="astype",
                         zero_derivative=zero_derivative)

    def impl(self, *vals: Any, **params: Any) -> np.ndarray:
        """Convert the value."""
        return np.asarray(vals[0]).astype(params["dtype"])


ASTYPE = AsType(zero_derivative=False)
ASTYPE_ZERO = AsType(zero_derivative=True)


def astype(a: Any, dtype: Any) -> Any:
    """Traced ``a.astype(dtype)``: float targets keep the derivative, others drop it."""
    dtype = np.dtype(dtype)
    prim = ASTYPE if dtype.kind in "fc" else ASTYPE_ZERO
    return bind(prim, (a,), {"dtype": dtype})


@register_function(np.real, family="elementwise", via="astype", note="real arrays only")
def _real(val: Any) -> Any:
    if np.dtype(val.dtype).kind == "c":
        raise UnsupportedPrimitiveError("numpy.real", "complex arrays are not supported")
    return astype(val, val.dtype)


class _Round(Elementwise):
    def __init__(self) -> None:
        super().__init__(np.round, (None,), zero_derivative=True, name="round")

    def impl(self, *vals: Any, **params: Any) -> np.ndarray:
        return np.asarray(np.round(vals[0], params.get("decimals", 0)))


ROUND = _Round()


@register_function(np.round, np.around, family="elementwise", via="round (zero derivative)")
def _round(a: Any, decimals: int = 0, out: Any = None) -> Any:
    res = bind(ROUND, (a,), {"decimals": int(decimals)})
    if out is not None:
        out[...] = res
        return out
    return res
