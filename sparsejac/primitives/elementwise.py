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

import contextvars
import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.special as sc

from sparsejac.errors import TracedConversionError, UnsupportedPrimitiveError
from sparsejac.numeric import mul0, shared_arange, sorted_unique
from sparsejac.primitives import depsets
from sparsejac.primitives import partials as dp
from sparsejac.primitives.core import (
    Deps,
    LocalJac,
    Primitive,
    bind,
    public_name,
    register_function,
    register_ufunc,
)
from sparsejac.primitives.partials import (
    ABOVE_ONE,
    NONZERO,
    POSITIVE,
    PROBABILITY,
    REAL,
    UNIT,
    Partial,
)
from sparsejac.tracing.callers import user_line
from sparsejac.tracing.program import Node
from sparsejac.tracing.tracer import Tracer

#: numpy's own asarray, bound at import: a trace wraps np.asarray (user code's
#: conversions of buffers), and this package's hot paths need none of that
_asarray = np.asarray


__all__ = ["ELEMENTWISE", "TERNARY_ROWS", "ZERO_DERIVATIVE", "Elementwise", "astype",
           "refuse_traced"]

def _entries(c: Any, shape: tuple[int, ...]) -> Any:
    """A partial's value as one value per output element (a scalar stays a scalar).

    A traced value (the reverse sweep recorded for second order) stays traced.
    """
    if isinstance(c, Tracer):  # (each broadcast or reshape of a Tracer is a recorded node)
        if tuple(c.shape) == tuple(shape) and len(shape) <= 1:
            return c  # a scalar step's partial, or a vector's: one value per element already
        return np.broadcast_to(c, shape).reshape(-1)
    if np.ndim(c) == 0:
        return float(c)
    return np.ascontiguousarray(np.broadcast_to(c, shape), dtype=np.float64).ravel()


#: The partials of one linearisation point, by (node, operand), while a walk that makes
#: several products there runs (:class:`~sparsejac.ad.InterpretedLinearization`): each
#: partial is computed at its first product only.
_PARTIALS: contextvars.ContextVar[dict[tuple[int, int], Any] | None] = contextvars.ContextVar(
    "sparsejac_partials", default=None)


def _eval_partial(part: Callable[..., Any], vals: Sequence[Any], out: Any) -> Any:
    """A partial derivative's value; its inf/nan (1/x at 0) are not the user's warnings.

    Operands are read as the ufunc's loop read them: a ``float32`` (``float16``) constant
    in a ``float64`` operation is cast first, so ``np.float32(2.5) ** x`` is differentiated
    with the ``float64`` logarithm of 2.5, not the ``float32`` one (a relative error of 3e-8).
    """
    if getattr(out, "dtype", None) == np.float64:
        vals = [v.astype(np.float64) if isinstance(v, np.ndarray | np.generic)
                and v.dtype.kind == "f" and v.dtype.itemsize < 8 else v for v in vals]
    with np.errstate(all="ignore"):  # (an underflow too, under np.errstate(all="raise"))
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
        return _asarray(self.fn(*vals, **params))

    def pattern(self, node: Node, deps: Sequence[Deps | None], local: bool) -> Deps | None:
        """Union of the operands' broadcast dependency rows (only chosen operands if local)."""
        if self.zero_derivative:
            return None
        if node.out.size == 1 and (not local or self.select is None):
            return self._scalar_pattern(node, deps, local)
        return self._general_pattern(node, deps, local)

    def _general_pattern(self, node: Node, deps: Sequence[Deps | None], local: bool
                         ) -> Deps | None:
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

    def _scalar_pattern(self, node: Node, deps: Sequence[Deps | None], local: bool
                        ) -> Deps | None:
        """:meth:`pattern` for one output element (element loops).

        The union of the operands' single rows, without the broadcasting and masking
        machinery of the general path (whose result it equals).
        """
        kept: list[Deps] = []
        n = -1
        for k, d in enumerate(deps):
            part = self.partials[k]
            if d is None or part is None:
                continue
            if d.shape[0] != 1:  # (an operand with another number of elements)
                return self._general_pattern(node, deps, local)
            n = d.shape[1]
            nonzero = _constant_partial_nonzero(part, node)
            if nonzero is None or nonzero.any():  # else a structural zero: nothing
                kept.append(d)
        if n < 0:
            return None
        if len(kept) == 1:
            return kept[0]
        if not kept:
            idx = np.zeros(0, np.int64)
        elif sum(d.indices.size for d in kept) <= 32:  # small sets (element loops): in Python
            idx = np.array(sorted(set().union(*(d.indices.tolist() for d in kept))),
                           dtype=np.int64)
        else:
            idx = sorted_unique(np.concatenate([d.indices for d in kept]))
        return depsets.DepSet(np.asarray(idx, dtype=np.int64),
                              np.array([0, idx.size], dtype=np.int64), (1, n))

    def jvp(
        self, node: Node, vals: Sequence[Any], tangents: Sequence[np.ndarray | None], out: Any
    ) -> np.ndarray | None:
        """``sum_k partial_k * t_k``."""
        if self.zero_derivative:
            return None
        out_shape = node.out.shape
        acc = None
        p = 0
        cache = _PARTIALS.get()
        for k, t in enumerate(tangents):
            part = self.partials[k]
            if t is None or part is None:
                continue
            p = t.shape[0]
            if cache is None:
                c = _eval_partial(part, vals, out)
            else:
                c = cache.get((id(node), k), cache)
                if c is cache:  # (the dict itself: not computed yet)
                    c = cache[(id(node), k)] = _eval_partial(part, vals, out)
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
        rows = shared_arange(node.out.size)  # one read-only array for every such node
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
# the tables
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Row:
    """One elementwise operation: ufunc, partials, domain, and optional select rules.

    ``refuse`` names, per operand, an argument whose derivative is not available in closed
    form (the order of a Bessel function, the parameters of ``gammainc``): ``(name, why)``,
    or None. Tracing such an argument (one that depends on x) is refused with a message
    naming the function and the argument; its partial is then never needed (``None``).
    """

    fn: np.ufunc
    partials: tuple[Partial, ...]
    domain: tuple[float, float] = REAL
    select: tuple[Callable[..., Any] | None, ...] | None = None
    refuse: tuple[tuple[str, str] | None, ...] | None = None


_ORDER = "the derivative with respect to the order has no closed form"
_INTEGER = "an integer order has no derivative"
_PARAMETER = "the derivative with respect to this parameter has no closed form"


#: Differentiable ufuncs: (ufunc, partials, test domain[, select]).
UNARY_ROWS = [
    Row(np.negative, (dp.minus_one,)),
    Row(np.positive, (dp.one,)),
    Row(np.absolute, (dp.sign,), NONZERO),
    Row(np.fabs, (dp.sign,), NONZERO),
    Row(np.sqrt, (dp.sqrt,), POSITIVE),
    Row(np.cbrt, (dp.cbrt,), NONZERO),
    Row(np.square, (dp.square,)),
    Row(np.reciprocal, (dp.reciprocal,), NONZERO),
    Row(np.exp, (dp.exp,)),
    Row(np.exp2, (dp.exp2,)),
    Row(np.expm1, (dp.expm1,)),
    Row(np.log, (dp.log,), POSITIVE),
    Row(np.log2, (dp.log2,), POSITIVE),
    Row(np.log10, (dp.log10,), POSITIVE),
    Row(np.log1p, (dp.log1p,), POSITIVE),
    Row(np.sin, (dp.sin,)),
    Row(np.cos, (dp.cos,)),
    Row(np.tan, (dp.tan,), UNIT),
    Row(np.arcsin, (dp.arcsin,), UNIT),
    Row(np.arccos, (dp.arccos,), UNIT),
    Row(np.arctan, (dp.arctan,)),
    Row(np.sinh, (dp.sinh,)),
    Row(np.cosh, (dp.cosh,)),
    Row(np.tanh, (dp.tanh,)),
    Row(np.arcsinh, (dp.arcsinh,)),
    Row(np.arccosh, (dp.arccosh,), ABOVE_ONE),
    Row(np.arctanh, (dp.arctanh,), UNIT),
    Row(np.deg2rad, (dp.deg2rad,)),
    Row(np.rad2deg, (dp.rad2deg,)),
    Row(np.conjugate, (dp.one,)),
    # scipy.special: smooth functions that scientific residuals and right-hand sides use
    Row(sc.erf, (dp.erf,)),
    Row(sc.erfc, (dp.erfc,)),
    Row(sc.erfcx, (dp.erfcx,)),
    Row(sc.erfinv, (dp.erfinv,), UNIT),
    Row(sc.expit, (dp.expit,)),
    Row(sc.logit, (dp.logit,), PROBABILITY),
    Row(sc.log_expit, (dp.log_expit,)),
    Row(sc.gammaln, (dp.gammaln,), POSITIVE),
    Row(sc.gamma, (dp.gamma,), POSITIVE),
    Row(sc.digamma, (dp.digamma,), POSITIVE),
    Row(sc.ndtr, (dp.ndtr,)),
    Row(sc.log_ndtr, (dp.log_ndtr,)),
    Row(sc.ndtri, (dp.ndtri,), PROBABILITY),
    Row(sc.entr, (dp.entr,), POSITIVE),
    Row(sc.j0, (dp.j0,)),
    Row(sc.i0, (dp.i0,)),
    Row(np.radians, (dp.deg2rad,)),
    Row(np.degrees, (dp.rad2deg,)),
    Row(sc.y0, (dp.y0,), POSITIVE),
    Row(sc.y1, (dp.y1,), POSITIVE),
    Row(sc.j1, (dp.j1,), NONZERO),
    Row(sc.i1, (dp.i1,), NONZERO),
    Row(sc.rgamma, (dp.rgamma,), POSITIVE),
    Row(sc.erfcinv, (dp.erfcinv,), (0.1, 1.9)),
]

BINARY_ROWS = [
    Row(np.add, (dp.one, dp.one)),
    Row(np.subtract, (dp.one, dp.minus_one)),
    Row(np.multiply, (dp.b, dp.a)),
    Row(np.true_divide, (dp.div_a, dp.div_b), NONZERO),
    Row(np.power, (dp.pow_a, dp.pow_b), POSITIVE),
    Row(np.float_power, (dp.pow_a, dp.pow_b), POSITIVE),
    # at a tie, half of each operand's derivative (see partials.ge)
    Row(np.maximum, (dp.ge, dp.lt), REAL, (dp.sel_ge, dp.sel_le)),
    Row(np.minimum, (dp.le, dp.gt), REAL, (dp.sel_le, dp.sel_ge)),
    Row(np.fmax, (dp.fmax_a, dp.fmax_b), REAL, (dp.sel_fmax_a, dp.sel_fmax_b)),
    Row(np.fmin, (dp.fmin_a, dp.fmin_b), REAL, (dp.sel_fmin_a, dp.sel_fmin_b)),
    Row(np.arctan2, (dp.arctan2_a, dp.arctan2_b), NONZERO),
    Row(np.hypot, (dp.hypot_a, dp.hypot_b), NONZERO),
    # x2 where x1 == 0 (a local pattern keeps it there only); piecewise constant in x1
    Row(np.heaviside, (None, dp.heaviside_b), REAL, (None, dp.sel_a_zero)),
    Row(np.logaddexp, (dp.logaddexp_a, dp.logaddexp_b)),
    Row(np.logaddexp2, (dp.logaddexp2_a, dp.logaddexp2_b)),
    Row(np.remainder, (dp.one, dp.remainder_b), POSITIVE),
    Row(np.fmod, (dp.one, dp.fmod_b), POSITIVE),
    Row(np.copysign, (dp.copysign_a, None), NONZERO),
    Row(np.ldexp, (dp.ldexp_a, None)),
    Row(np.nextafter, (dp.one, None)),  # one ulp away from x1: d/dx1 = 1 (not zero)
    Row(sc.xlogy, (dp.xlogy_a, dp.xlogy_b), POSITIVE),
    Row(sc.xlog1py, (dp.xlog1py_a, dp.xlog1py_b), POSITIVE),
    Row(sc.beta, (dp.beta_a, dp.beta_b), POSITIVE),
    Row(sc.betaln, (dp.betaln_a, dp.betaln_b), POSITIVE),
    Row(sc.poch, (dp.poch_z, dp.poch_m), POSITIVE),
    Row(sc.pdtr, (None, dp.pdtr_m), POSITIVE),  # piecewise constant in the count k
    Row(sc.pdtrc, (None, dp.pdtrc_m), POSITIVE),
    # the threshold takes part where |r| > delta only (a local pattern keeps it there)
    Row(sc.huber, (dp.huber_delta, dp.huber_r), POSITIVE, (dp.sel_huber_delta, None)),
    Row(sc.pseudo_huber, (dp.pseudo_huber_delta, dp.pseudo_huber_r), POSITIVE),
    # an order or a parameter first: refused when traced
    Row(sc.iv, (None, dp.iv_x), POSITIVE, refuse=(("v", _ORDER), None)),
    Row(sc.ive, (None, dp.ive_x), POSITIVE, refuse=(("v", _ORDER), None)),
    Row(sc.jv, (None, dp.jv_x), POSITIVE, refuse=(("v", _ORDER), None)),
    Row(sc.kv, (None, dp.kv_x), POSITIVE, refuse=(("v", _ORDER), None)),
    Row(sc.yn, (None, dp.yn_x), POSITIVE, refuse=(("n", _INTEGER), None)),
    Row(sc.gammainc, (None, dp.gammainc_x), POSITIVE, refuse=(("a", _PARAMETER), None)),
    Row(sc.gammaincc, (None, dp.gammaincc_x), POSITIVE, refuse=(("a", _PARAMETER), None)),
    Row(sc.stdtr, (None, dp.stdtr_t), POSITIVE, refuse=(("df", _PARAMETER), None)),
]

#: Ternary ufuncs (parameters first, refused when traced).
TERNARY_ROWS = [
    Row(sc.betainc, (None, None, dp.betainc_x), PROBABILITY,
        refuse=(("a", _PARAMETER), ("b", _PARAMETER), None)),
    Row(sc.betaincc, (None, None, dp.betaincc_x), PROBABILITY,
        refuse=(("a", _PARAMETER), ("b", _PARAMETER), None)),
]

#: ufuncs whose derivative is identically zero (their results carry no dependencies).
ZERO_DERIVATIVE: list[np.ufunc] = [
    np.sign, np.floor, np.ceil, np.trunc, np.rint, np.signbit, np.isnan, np.isinf,
    np.isfinite, np.spacing, np.logical_not, np.invert,
    np.floor_divide, np.greater, np.greater_equal, np.less, np.less_equal, np.equal,
    np.not_equal, np.logical_and, np.logical_or, np.logical_xor, np.bitwise_and,
    np.bitwise_or, np.bitwise_xor, np.left_shift, np.right_shift, np.gcd, np.lcm,
]

ELEMENTWISE: dict[str, Elementwise] = {}


def refuse_traced(name: str, args: Sequence[Any],
                  refuse: Sequence[tuple[str, str] | None] | None) -> None:
    """Refuse the arguments of ``name`` that may not be traced, when they depend on x."""
    if not refuse:
        return
    from sparsejac.tracing.tracer import Tracer

    for a, why in zip(args, refuse, strict=False):
        if why is not None and isinstance(a, Tracer) and a._var.active:
            raise UnsupportedPrimitiveError(
                name, f"received a traced `{why[0]}`: {why[1]}; allowed: `{why[0]}` constant "
                "(or a parameter), the other arguments traced",
                problem=f"cannot differentiate with respect to its argument `{why[0]}`")


def _make_call_handler(prim: Elementwise, refuse: Any = None) -> Callable[..., Any]:
    def handler(*args: Any, **kwargs: Any) -> Any:
        if len(args) != prim.nin:
            raise TypeError(f"numpy.{prim.name} takes {prim.nin} operands, got {len(args)}")
        if refuse is not None:
            refuse_traced(public_name(prim.fn), args, refuse)
        casting, dtype = kwargs.get("casting", "same_kind"), kwargs.get("dtype")
        if casting != "same_kind" and dtype is not None:  # numpy casts the operands first
            args = _cast_operands(prim.name, args, np.dtype(dtype), casting)
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
        if not params and prim.name in ("power", "square", "multiply"):
            base = _squared_modulus(prim.name, args)
            if base is not None:  # |u|**2 is u**2, bit for bit, and smooth at u = 0
                return bind(ELEMENTWISE["square"], (base,), {})
        if not params and prim.name == "power":
            result = _power(prim, args)
            fractional = _fractional_exponents(args)
            if fractional is not None:  # |u| ** p, 0 < p < 2: its own second derivative
                u = Tracer(args[0]._trace, args[0]._var.modulus_of)
                result = bind(WHERE, (fractional, bind(ABS_POWER, (args[0], args[1], u)),
                                      result))
            even = _even_exponents(args)
            if even is not None:  # |u| ** e is u ** e, bit for bit, where e is even
                u = Tracer(args[0]._trace, args[0]._var.modulus_of)
                result = bind(WHERE, (even, handler(u, args[1]), result))
            return result
        return bind(prim, args, params)

    return handler


def _power(prim: Elementwise, args: tuple[Any, ...]) -> Any:
    """``a ** b``, with no dependence where a constant exponent is 0."""
    zero = _zero_exponents(args)
    if zero is not None:  # x ** 0 is 1 (numpy: for every x): no dependence there
        return bind(WHERE, (zero, 1.0, bind(prim, args, {})))
    return bind(prim, args, {})


def _even_exponents(args: tuple[Any, ...]) -> np.ndarray | None:
    """Where a constant exponent array of ``np.abs(u)`` is a nonzero even integer; or None.

    ``np.sum(np.abs(x) ** np.arange(2, n + 2))``: the modulus's zero derivative at 0 would
    give the smooth ``x[0] ** 2`` a second derivative of 0 there instead of 2. (A scalar 2
    is :func:`_squared_modulus`'s.)
    """
    base, e = args[0], args[1]
    if not isinstance(base, Tracer) or base._var.modulus_of is None or isinstance(e, Tracer):
        return None
    e = np.asarray(e)
    if e.ndim == 0 or e.dtype.kind not in "iuf" or not e.size:
        return None
    if np.result_type(base._var.dtype, e) != base._var.dtype:  # promotes: numpy's own power
        return None
    with np.errstate(invalid="ignore"):
        even = np.isfinite(e) & (np.mod(e, 2) == 0) & (e != 0)
    return even if even.any() else None


def _fractional_exponents(args: tuple[Any, ...]) -> np.ndarray | None:
    """Where a constant exponent of ``np.abs(u)`` lies in ``(0, 2)`` (not 1); or None.

    ``|u| ** p`` there has a second derivative ``p (p - 1) |u| ** (p - 2)`` that is infinite
    at ``u = 0`` (a bridge penalty ``sum |w| ** 1.5`` at ``w = 0``); the power of the modulus
    gave 0 there (its factor ``abs'(0) ** 2 = 0`` against the infinite ``pow''``).
    :data:`ABS_POWER` computes the same bits with derivatives of its own.
    """
    base, e = args[0], args[1]
    if not isinstance(base, Tracer) or base._var.modulus_of is None or isinstance(e, Tracer):
        return None
    e = np.asarray(e)
    if e.dtype.kind not in "iuf" or not e.size:
        return None
    if np.result_type(base._var.dtype, e) != base._var.dtype:  # promotes: numpy's own power
        return None
    with np.errstate(invalid="ignore"):
        inside = (e > 0) & (e < 2) & (e != 1)
    return np.broadcast_to(inside, np.broadcast_shapes(base.shape, e.shape)).copy() \
        if inside.any() else None


def _abs_power(a: Any, p: Any, u: Any = None) -> Any:
    """``a ** p`` for ``a = |u|`` (numpy's own bits; ``u`` carries the derivative)."""
    return np.power(a, p)


def _signed_power(u: Any, q: Any) -> Any:
    """``sign(u) |u| ** q``, 0 at ``u = 0`` whatever ``q``."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(np.equal(u, 0), 0.0, np.sign(u) * np.power(np.absolute(u), q))


def _abs_power_du(a: Any, p: Any, u: Any, out: Any) -> Any:
    """``p sign(u) |u| ** (p - 1)``: a signed power, whose own derivative follows."""
    q = np.subtract(p, 1)
    return np.multiply(p, bind(SIGNED_POWER, (u, q)) if isinstance(u, Tracer)
                       else _signed_power(u, q))


def _signed_power_du(u: Any, q: Any, out: Any) -> Any:
    """``q |u| ** (q - 1)``: infinite at 0 for ``q < 1``, as ``|u| ** p``'s second derivative."""
    r = np.subtract(q, 1)
    with np.errstate(divide="ignore"):
        a = np.absolute(u)
        return np.multiply(q, bind(ABS_POWER, (a, r, u)) if isinstance(u, Tracer)
                           else _abs_power(a, r))


#: ``|u| ** p`` (operands ``|u|``, ``p``, ``u``: the value is the power of the modulus, the
#: derivative flows through ``u``) and ``sign(u) |u| ** q`` for a constant exponent: each the
#: other's derivative (times the exponent), so that a Hessian of ``|u| ** p`` is
#: ``p (p - 1) |u| ** (p - 2)`` also at ``u = 0`` (see :func:`_fractional_exponents`). The
#: compiled tape encodes ``abs_power`` as the power of its first operand (the same first
#: derivatives).
ABS_POWER = Elementwise(_abs_power, (None, None, _abs_power_du), name="abs_power")
SIGNED_POWER = Elementwise(_signed_power, (_signed_power_du, None), name="signed_power")


def _zero_exponents(args: tuple[Any, ...]) -> np.ndarray | None:
    """Where a constant exponent of a traced base is 0, broadcast to the result; or None.

    ``c ** nu`` with an order matrix ``nu`` of mostly zeros: mass-action rates.
    """
    if len(args) != 2 or not isinstance(args[0], Tracer) or not args[0]._var.active:
        return None
    b = args[1]
    if isinstance(b, Tracer):
        if not b._var.is_const:
            return None
        b = b._var.value
    zero = np.asarray(b) == 0
    if not zero.any():
        return None
    return np.broadcast_to(zero, np.broadcast_shapes(args[0].shape, zero.shape)).copy()


def _squared_modulus(name: str, args: tuple[Any, ...]) -> Tracer | None:
    """``u`` when ``args`` square ``np.abs(u)`` of a real ``u``.

    ``abs(u) ** 2``, ``np.square(abs(u))``, ``abs(u) * abs(u)`` (either one or two moduli).

    The modulus's derivative at 0 is 0 by convention; squared, it would give the smooth
    ``u ** 2`` a second derivative of 0 there instead of 2.
    """
    first = args[0]
    if not isinstance(first, Tracer) or first._var.modulus_of is None:
        return None
    if name == "power":
        e = args[1]
        if isinstance(e, Tracer) or np.ndim(e) != 0 or not np.isreal(e) or e != 2:
            return None
        if np.result_type(first._var.dtype, e) != first._var.dtype:  # a strong exponent
            return None  # promotes (np.float64(2) on float32): numpy's own power
    elif name == "multiply" and not (isinstance(args[1], Tracer)
                                     and args[1]._var.modulus_of is first._var.modulus_of):
        return None
    return Tracer(first._trace, first._var.modulus_of)


def _cast_operands(name: str, args: tuple[Any, ...], dtype: np.dtype[Any], casting: str
                   ) -> tuple[Any, ...]:
    """The operands cast to ``dtype`` as numpy does for ``casting=`` (or numpy's refusal)."""
    out = []
    for a in args:
        src = a.dtype if hasattr(a, "dtype") else np.result_type(a)
        if not np.can_cast(src, dtype, casting=casting):  # type: ignore[arg-type]
            raise TypeError(f"Cannot cast ufunc {name!r} input from {src!r} to {dtype!r} with "
                            f"casting rule {casting!r}")
        out.append(a.astype(dtype) if hasattr(a, "astype") else np.asarray(a).astype(dtype))
    return tuple(out)


def _register_rows() -> None:
    for row in UNARY_ROWS + BINARY_ROWS + TERNARY_ROWS:
        prim = Elementwise(row.fn, row.partials, domain=row.domain, select=row.select)
        ELEMENTWISE[prim.name] = prim
        note = ""
        if row.refuse:
            names = [f"`{r[0]}`" for r in row.refuse if r is not None]
            note = f"{' and '.join(names)} constant (no closed-form derivative)"
        register_ufunc(row.fn, "__call__", _make_call_handler(prim, row.refuse),
                       family="elementwise", via=prim.name, note=note)
    for uf in ZERO_DERIVATIVE:
        prim = Elementwise(uf, (None,) * uf.nin, zero_derivative=True)
        ELEMENTWISE[prim.name] = prim
        register_ufunc(uf, "__call__", _make_call_handler(prim), family="elementwise",
                       via=f"{prim.name} (zero derivative)")


_register_rows()

# -- where -------------------------------------------------------------------------------

WHERE = Elementwise(
    np.where, (None, dp.where_a, dp.where_b), select=(None, dp.where_sel_a, dp.where_sel_b),
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
    if isinstance(condition, Tracer) and condition._var.active and \
            condition._var.dtype != np.bool_:  # np.where(k, ...) tests k != 0: a tie check
        condition = astype(condition, np.bool_)
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
        super().__init__(np.asarray, (None,) if zero_derivative else (dp.one,), name="astype",
                         zero_derivative=zero_derivative)

    def impl(self, *vals: Any, **params: Any) -> np.ndarray:
        """Convert the value."""
        return np.asarray(vals[0]).astype(params["dtype"])


ASTYPE = AsType(zero_derivative=False)
ASTYPE_ZERO = AsType(zero_derivative=True)


def astype(a: Any, dtype: Any) -> Any:
    """Traced ``a.astype(dtype)``: float targets keep the derivative, others drop it."""
    dtype = np.dtype(dtype)
    if dtype.kind not in "biufc" and not a._var.is_const:
        raise TracedConversionError(
            f"a traced array was converted to dtype {dtype}{user_line()} "
            "(np.array(x, dtype=object), x.astype(object)): numpy's object or string "
            "elements would not carry the derivative, so the Jacobian would lose its "
            "dependence on x. Keep x a float array and use numpy's functions on it (np.exp, "
            "not math.exp on each element); for code that needs Python objects (math, "
            "mpmath, Fraction), use mode='fd' with `sparsity=`.")
    if dtype.kind == "c" and not a._var.is_const:  # a complex intermediate: the pair (a, 0)
        from sparsejac.primitives.complex_pairs import ComplexPair

        return ComplexPair(bind(ASTYPE, (a,), {"dtype": np.dtype(np.float64)}), None,
                           tuple(a._var.shape))
    prim = ASTYPE if dtype.kind in "fc" else ASTYPE_ZERO
    return bind(prim, (a,), {"dtype": dtype})


@register_function(np.real, family="elementwise", via="astype", note="real arrays only")
def _real(val: Any) -> Any:
    if np.dtype(val.dtype).kind == "c":
        raise UnsupportedPrimitiveError("numpy.real", "complex arrays are not supported")
    return val.real  # numpy's np.real of a real array: a view, which writes through


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
