"""The compiled kernels of :mod:`sparsejac.ad.tape`: one interpreter loop over an instruction table.

Every variable of the program has a slot range in one float64 buffer; an instruction reads
slots and writes its output's slots. Instruction ``i`` is row ``i`` of ``code``:

``[op, out, size, a, b, active]``

* ``op == GATHER``: ``buf[out + idx[b + r]] = buf[idx[a + r]]`` (a copy by slot: indexing,
  ``setitem`` into a buffer whose output shares the buffer's slots, concatenation). When
  the output shares its operand's slots, ``active`` holds the offset (+ 1) of its rows in the
  ``saved`` array: a forward pass that a reverse pass follows keeps the values it overwrites
  there, and the reverse pass puts them back before it walks the earlier instructions (whose
  partial derivatives read those slots);
* ``op == SELECT``: ``buf[out + r] = buf[idx[a + n + r]]`` where ``buf[idx[a + r]]`` (the
  condition) is not zero, else ``buf[idx[a + 2 n + r]]`` (``np.where``; ``n`` is ``size``),
  tangents alike; ``active`` as for a binary operation;
* ``op == BILINEAR``: ``buf[out + r] += sum_e val[e] * buf[col[e]] * buf[col[e + 1]]`` for
  ``e`` in ``range(ptr[a + r], ptr[a + r + 1], 2)`` (a product of two operands that move:
  ``@``, ``np.outer``, an ``np.einsum``); ``active`` as for a binary operation;
* ``op == SOLVE``: ``X = A⁻¹ B`` for small square systems (``np.linalg.solve``), by LU with
  partial pivoting: ``idx[a : a + 3]`` is ``(n, k, batch)``, then the slots of ``A``
  (``batch × n × n``) and of ``B`` (``batch × n × k``), row-major; the output's slots are
  consecutive; ``active`` as for a binary operation (:func:`solve_forward`);
* ``op == LINEAR``: ``buf[out + r] += sum_e val[e] * buf[col[e]]`` for ``e`` in
  ``ptr[a + r] : ptr[a + r + 1]`` (the constant part is preloaded in the buffer); a gather,
  a reduction or a constant contraction;
* unary ``op``: ``buf[out + r] = op(buf[idx[a + r]])``;
* binary ``op``: ``buf[out + r] = op(buf[idx[a + r]], buf[idx[b + r]])`` (``idx`` spells out
  broadcasting);
* ``active``: bit 0 for the first operand, bit 1 for the second (which carry tangents).

The partial derivatives are those of :mod:`sparsejac.primitives.partials`, with the same
conventions: a zero partial or a zero tangent contributes nothing, even against an infinite
or NaN factor (:func:`sparsejac.numeric.mul0`).
"""

from __future__ import annotations

import math

import numpy as np

from sparsejac.ad._tape_solve import solve_forward, solve_reverse
from sparsejac.kernels import kernel, typed_kernel

LINEAR = 0
GATHER = 100
SELECT = 101
BILINEAR = 102
SOLVE = 103
# unary
NEG, POS, ABS, SQRT, SQUARE, RECIP, EXP, EXPM1, LOG, LOG1P = 1, 2, 3, 4, 5, 6, 7, 8, 9, 10
SIN, COS, TAN, SINH, COSH, TANH, ARCTAN = 11, 12, 13, 14, 15, 16, 17
NOT = 18  # logical: 1.0 or 0.0 (no derivative)
LOG2, LOG10, EXP2, ARCSIN, ARCCOS, ARCSINH, ARCCOSH, ARCTANH = 19, 20, 21, 22, 23, 24, 25, 26
ERF, ERFC, EXPIT = 27, 28, 29  # scipy.special's
SIGN = 30  # np.sign (no derivative: the partials of abs, a Hessian's gradient)
#: np.sign of one element checked for a tie (traced with a tie check, an element loop's
#: ``np.sign(u[i] - u[i - 1])``): NaN at exactly 0, which makes the call decline (the chain
#: engine then refuses the tie by name, as it does for every tie-checked node)
SIGN_TIE = 31
# binary (>= 32)
ADD, SUB, MUL, DIV, POW, ARCTAN2, REMAINDER = 32, 33, 34, 35, 36, 37, 38
MAXIMUM, MINIMUM, HYPOT = 39, 40, 50
LN2, LN10 = math.log(2.0), math.log(10.0)
#: the largest argument whose exp is finite (fdlibm's overflow threshold); above it the C
#: library gives inf and Python's math.exp raises OverflowError
EXP_MAX = 709.782712893384
TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)
# comparisons and logical operations: 1.0 or 0.0 (no derivative)
LESS, LESS_EQUAL, GREATER, GREATER_EQUAL, EQUAL, NOT_EQUAL = 41, 42, 43, 44, 45, 46
AND, OR, XOR = 47, 48, 49  # (comparisons: LESS .. XOR)
BINARY = 32


@typed_kernel(inline="always")
def _unary(op: int, a: float) -> float:  # pragma: no cover - compiled
    if op == NEG:
        return -a
    if op == POS:
        return a
    if op == ABS:
        return abs(a)
    if op == SQRT:
        return math.sqrt(a) if a >= 0.0 else math.nan
    if op == SQUARE:
        return a * a
    if op == RECIP:
        return 1.0 / a if a != 0.0 else math.copysign(math.inf, a)
    if op == EXP:  # (inf above the C library's threshold: where Python's math.exp raises)
        return math.inf if a > EXP_MAX else math.exp(a)
    if op == EXPM1:
        return math.inf if a > EXP_MAX else math.expm1(a)
    if op == LOG:
        if a > 0.0:
            return math.log(a)
        return -math.inf if a == 0.0 else math.nan
    if op == LOG1P:
        if a > -1.0:
            return math.log1p(a)
        return -math.inf if a == -1.0 else math.nan
    if op == SIN:
        return math.sin(a)
    if op == COS:
        return math.cos(a)
    if op == TAN:
        return math.tan(a)
    if op == SINH:
        return math.sinh(a)
    if op == COSH:
        return math.cosh(a)
    if op == TANH:
        return math.tanh(a)
    if op == NOT:
        return 1.0 if a == 0.0 else 0.0
    if op == SIGN:  # numpy's: 0.0 at either zero, NaN kept
        return _sign(a) if a != 0.0 else 0.0
    if op == SIGN_TIE:
        return _sign(a) if a != 0.0 else math.nan
    if op >= LOG2:
        return _unary2(op, a)
    return math.atan(a)  # ARCTAN


@typed_kernel(inline="always")
def _expit(a: float) -> float:  # pragma: no cover - compiled
    if a != a:
        return a
    if a >= 0.0:
        return 1.0 / (1.0 + math.exp(-a))
    e = math.exp(a)
    return e / (1.0 + e)


@typed_kernel(inline="always")
def _unary2(op: int, a: float) -> float:  # pragma: no cover - compiled
    """The functions of opcodes 19 and up (domains as numpy's: NaN outside, inf at poles)."""
    if LOG2 <= op <= LOG10:
        if a > 0.0:
            return math.log2(a) if op == LOG2 else math.log10(a)
        return -math.inf if a == 0.0 else math.nan
    if op == EXP2:
        if a > 1100.0:
            return math.inf
        return 2.0 ** a if a == a else a
    if ARCSIN <= op <= ARCCOS:
        if not -1.0 <= a <= 1.0:
            return math.nan
        return math.asin(a) if op == ARCSIN else math.acos(a)
    if op == ARCSINH:
        return math.asinh(a)
    if op == ARCCOSH:
        return math.acosh(a) if a >= 1.0 else math.nan
    if op == ARCTANH:
        if abs(a) == 1.0:
            return math.copysign(math.inf, a)
        return math.atanh(a) if -1.0 < a < 1.0 else math.nan
    if op == ERF:
        return math.erf(a)
    if op == ERFC:
        return math.erfc(a)
    return _expit(a)  # EXPIT


@typed_kernel(inline="always")
def _root(v: float) -> float:  # pragma: no cover - compiled
    return math.sqrt(v) if v >= 0.0 else math.nan


@typed_kernel(inline="always")
def _dunary2(op: int, a: float, out: float) -> float:  # pragma: no cover - compiled
    """The partials of opcodes 19 and up, as :mod:`sparsejac.primitives.partials` writes them."""
    if op == LOG2:
        return _div(1.0, (a + 0.0) * LN2)
    if op == LOG10:
        return _div(1.0, (a + 0.0) * LN10)
    if op == EXP2:
        return out * LN2
    if op == ARCSIN:
        return _div(1.0, _root((1.0 - a) * (1.0 + a)))
    if op == ARCCOS:
        return _div(-1.0, _root((1.0 - a) * (1.0 + a)))
    if op == ARCSINH:
        return _div(1.0, math.hypot(1.0, a))
    if op == ARCCOSH:
        return _div(1.0, _root(a - 1.0) * _root(a + 1.0))
    if op == ARCTANH:
        return _div(1.0, (1.0 - a) * (1.0 + a))
    if op == ERF:
        return TWO_OVER_SQRT_PI * math.exp(-a * a)
    if op == ERFC:
        return -TWO_OVER_SQRT_PI * math.exp(-a * a)
    return out * _expit(-a)  # EXPIT: s(x) s(-x)


@typed_kernel(inline="always")
def _sign(a: float) -> float:  # pragma: no cover - compiled
    if a > 0.0:
        return 1.0
    if a < 0.0:
        return -1.0
    return a  # 0.0 or nan, as np.sign


@typed_kernel(inline="always")
def _div(a: float, b: float) -> float:  # pragma: no cover - compiled
    if b != 0.0:
        return a / b
    if a == 0.0 or a != a:
        return math.nan
    return math.copysign(math.inf, a) * math.copysign(1.0, b)


@typed_kernel(inline="always")
def _dunary(op: int, a: float, out: float) -> float:  # pragma: no cover - compiled
    if op == NEG:
        return -1.0
    if op == POS:
        return 1.0
    if op == ABS:
        return _sign(a)
    if op == SQRT:
        return _div(0.5, out + 0.0)  # (sqrt(-0.0) is -0.0: the partial is +inf there)
    if op == SQUARE:
        return 2.0 * a
    if op == RECIP:
        return -out * out
    if op == EXP:
        return out
    if op == EXPM1:
        return math.exp(a) if a <= EXP_MAX else math.inf
    if op == LOG:
        return _div(1.0, a + 0.0)
    if op == LOG1P:
        return _div(1.0, 1.0 + a)
    if op == SIN:
        return math.cos(a)
    if op == COS:
        return -math.sin(a)
    if op == TAN:
        return 1.0 + out * out
    if op == SINH:
        return math.cosh(a)
    if op == COSH:
        return math.sinh(a)
    if op == TANH:  # sech^2 (1 - tanh^2 lost its digits: 0 beyond |x| = 19)
        c = math.cosh(a) if abs(a) < 710.0 else math.inf
        return _div(1.0, c * c)
    if op in (NOT, SIGN, SIGN_TIE):
        return 0.0
    if op >= LOG2:
        return _dunary2(op, a, out)
    return _div(1.0, 1.0 + a * a)  # ARCTAN


@typed_kernel(inline="always")
def _pow(a: float, b: float) -> float:  # pragma: no cover - compiled
    if a < 0.0 and b != math.floor(b):
        return math.nan
    if a == 0.0 and b < 0.0:
        return math.inf
    return float(a ** b)


@typed_kernel(inline="always")
def _divmod(a: float, b: float) -> tuple[float, float]:  # pragma: no cover - compiled
    """The ``floor_divide`` and ``remainder`` of numpy for floats.

    numpy's npy_divmod is CPython's float divmod, which numba follows too; numpy's values
    where Python would raise (a zero divisor, NaN, an infinite dividend).
    """
    if b == 0.0 or math.isnan(a) or math.isnan(b) or math.isinf(a):
        return _div(a, b), math.nan
    return divmod(a, b)


@typed_kernel(inline="always")
def _binary(op: int, a: float, b: float) -> float:  # pragma: no cover - compiled
    if op == ADD:
        return a + b
    if op == SUB:
        return a - b
    if op == MUL:
        return a * b
    if op == DIV:
        return _div(a, b)
    if op == ARCTAN2:
        return math.atan2(a, b)
    if op == REMAINDER:
        return _divmod(a, b)[1]
    if op == MAXIMUM:  # numpy's: a NaN propagates, a tie gives b (the sign of a zero)
        if a != a:
            return a
        return a if a > b else b
    if op == MINIMUM:
        if a != a:
            return a
        return a if a < b else b
    if op == HYPOT:
        return math.hypot(a, b)
    if LESS <= op <= XOR:
        return 1.0 if _compare(op, a, b) else 0.0
    return _pow(a, b)


@typed_kernel(inline="always")
def _compare(op: int, a: float, b: float) -> bool:  # pragma: no cover - compiled
    """A comparison or logical operation of numpy (NaN compares false and is true)."""
    if op == LESS:
        return a < b
    if op == LESS_EQUAL:
        return a <= b
    if op == GREATER:
        return a > b
    if op == GREATER_EQUAL:
        return a >= b
    if op == EQUAL:
        return a == b
    if op == NOT_EQUAL:
        return a != b
    if op == AND:
        return a != 0.0 and b != 0.0
    if op == OR:
        return a != 0.0 or b != 0.0
    return (a != 0.0) != (b != 0.0)  # XOR


@typed_kernel(inline="always")
def _dbinary(op: int, a: float, b: float, out: float) -> tuple[float, float]:  # pragma: no cover
    if op == ADD:
        return 1.0, 1.0
    if op == SUB:
        return 1.0, -1.0
    if op == MUL:
        return b, a
    if op == DIV:
        return _div(1.0, b), -_div(out, b)
    if op == ARCTAN2:  # (b/h)/h, -(a/h)/h with h = hypot(a, b), as the registry's partials
        h = math.hypot(a, b)
        return _div(_div(b, h), h), -_div(_div(a, h), h)
    if op == REMAINDER:  # 1, -floor_divide(a, b)
        return 1.0, -_divmod(a, b)[0]
    if MAXIMUM <= op <= MINIMUM:  # the chosen operand's; halves at a tie (ge, le)
        if a == b:
            return 0.5, 0.5
        first = a > b if op == MAXIMUM else a < b
        if first:
            return 1.0, 0.0
        return (0.0, 1.0) if b == b and a == a else (0.0, 0.0)
    if op == HYPOT:  # a / out, b / out; 0 at the origin (the convention of abs and norm)
        if out == 0.0:
            return 0.0, 0.0
        return _div(a, out), _div(b, out)
    if LESS <= op <= XOR:
        return 0.0, 0.0
    # POW: b a^(b-1) (0 where b == 0); out log a (0 where a == 0)
    da = 0.0 if b == 0.0 else b * _pow(a, b - 1.0)
    if a == 0.0:
        db = 0.0
    elif a > 0.0:
        db = out * math.log(a)
    else:
        db = math.nan
    return da, db


@kernel(interpret=True)  # one pass over the tape
def run_forward(code, idx, ptr, col, val, buf, tb, saved):  # type: ignore[no-untyped-def]  # pragma: no cover
    """Values into ``buf`` and (``tb.shape[1] > 0``) tangents into ``tb``, in program order.

    With a non-empty ``saved``, the values that shared-slot gathers overwrite are kept there.
    """
    p = tb.shape[1]
    keep = saved.size > 0
    for i in range(code.shape[0]):
        op = code[i, 0]
        o = code[i, 1]
        n = code[i, 2]
        ia = code[i, 3]
        ib = code[i, 4]
        act = code[i, 5]
        if op == GATHER:
            if keep and act > 0:
                for r in range(n):
                    saved[act - 1 + r] = buf[o + idx[ib + r]]
            for r in range(n):
                src = idx[ia + r]
                dst = o + idx[ib + r]
                buf[dst] = buf[src]
                for j in range(p):
                    tb[dst, j] = tb[src, j]
        elif op == SELECT:
            for r in range(n):
                src = idx[ia + n + r] if buf[idx[ia + r]] != 0.0 else idx[ia + 2 * n + r]
                buf[o + r] = buf[src]
                if act:
                    for j in range(p):
                        tb[o + r, j] = tb[src, j]
        elif op == LINEAR:
            for r in range(n):
                acc = buf[o + r]
                for e in range(ptr[ia + r], ptr[ia + r + 1]):
                    acc += val[e] * buf[col[e]]
                buf[o + r] = acc
                for e in range(ptr[ia + r], ptr[ia + r + 1]):
                    c = val[e]
                    s = col[e]
                    if c == 0.0:
                        continue
                    for j in range(p):
                        t = tb[s, j]
                        if t != 0.0:
                            tb[o + r, j] += c * t
        elif op == SOLVE:
            solve_forward(idx, ia, o, buf, tb, act)
        elif op == BILINEAR:
            for r in range(n):
                acc = buf[o + r]
                for e in range(ptr[ia + r], ptr[ia + r + 1], 2):
                    acc += val[e] * buf[col[e]] * buf[col[e + 1]]
                buf[o + r] = acc
                if not (p and act):
                    continue
                for e in range(ptr[ia + r], ptr[ia + r + 1], 2):
                    sa = col[e]
                    sb = col[e + 1]
                    da = val[e] * buf[sb]
                    db = val[e] * buf[sa]
                    for j in range(p):
                        if act & 1 and da != 0.0:
                            t = tb[sa, j]
                            if t != 0.0:
                                tb[o + r, j] += t * da
                        if act & 2 and db != 0.0:
                            t = tb[sb, j]
                            if t != 0.0:
                                tb[o + r, j] += t * db
        elif op < BINARY:
            for r in range(n):
                s = idx[ia + r]
                a = buf[s]
                out = _unary(op, a)
                buf[o + r] = out
                if p and act & 1:
                    d = _dunary(op, a, out)
                    if d == 0.0:
                        continue
                    for j in range(p):
                        t = tb[s, j]
                        if t != 0.0:
                            tb[o + r, j] = t * d
        else:
            for r in range(n):
                sa = idx[ia + r]
                sb = idx[ib + r]
                a = buf[sa]
                b = buf[sb]
                out = _binary(op, a, b)
                buf[o + r] = out
                if p and act:
                    da, db = _dbinary(op, a, b, out)
                    for j in range(p):
                        acc = 0.0
                        if act & 1 and da != 0.0:
                            t = tb[sa, j]
                            if t != 0.0:
                                acc += t * da
                        if act & 2 and db != 0.0:
                            t = tb[sb, j]
                            if t != 0.0:
                                acc += t * db
                        tb[o + r, j] = acc


@kernel(inline="always")
def _pull2(cb, row, sa, sb, da, db, act):  # type: ignore[no-untyped-def]  # pragma: no cover
    """``cb[sa] += cb[row] da`` and ``cb[sb] += cb[row] db`` (active operands, nonzero terms)."""
    for j in range(cb.shape[1]):
        g = cb[row, j]
        if g != 0.0:
            if act & 1 and da != 0.0:
                cb[sa, j] += g * da
            if act & 2 and db != 0.0:
                cb[sb, j] += g * db


@kernel(interpret=True)  # one pass over the tape
def run_reverse(code, idx, ptr, col, val, buf, cb, saved):  # type: ignore[no-untyped-def]  # pragma: no cover
    """Cotangents into ``cb`` from the values in ``buf``, in reverse program order.

    ``saved`` is what the forward pass kept: each shared-slot gather's overwritten values are
    put back once its cotangents are through, so that earlier instructions see theirs.
    """
    q = cb.shape[1]
    for i in range(code.shape[0] - 1, -1, -1):
        op = code[i, 0]
        o = code[i, 1]
        n = code[i, 2]
        ia = code[i, 3]
        ib = code[i, 4]
        act = code[i, 5]
        if op == GATHER:
            for r in range(n):
                src = idx[ia + r]
                dst = o + idx[ib + r]
                for j in range(q):
                    g = cb[dst, j]
                    cb[dst, j] = 0.0  # the slot held another value before (a shared buffer)
                    cb[src, j] += g
            if act > 0:
                for r in range(n):
                    buf[o + idx[ib + r]] = saved[act - 1 + r]
        elif op == SELECT:
            for r in range(n):
                first = buf[idx[ia + r]] != 0.0
                if not act & (1 if first else 2):
                    continue
                src = idx[ia + n + r] if first else idx[ia + 2 * n + r]
                for j in range(q):
                    g = cb[o + r, j]
                    if g != 0.0:
                        cb[src, j] += g
        elif op == LINEAR:
            for r in range(n):
                for e in range(ptr[ia + r], ptr[ia + r + 1]):
                    c = val[e]
                    if c == 0.0:
                        continue
                    s = col[e]
                    for j in range(q):
                        g = cb[o + r, j]
                        if g != 0.0:
                            cb[s, j] += c * g
        elif op == SOLVE:
            if act:
                solve_reverse(idx, ia, o, buf, cb, act)
        elif op == BILINEAR:
            if not act:
                continue
            for r in range(n):
                for e in range(ptr[ia + r], ptr[ia + r + 1], 2):
                    sa = col[e]
                    sb = col[e + 1]
                    _pull2(cb, o + r, sa, sb, val[e] * buf[sb], val[e] * buf[sa], act)
        elif op < BINARY:
            if not act & 1:
                continue
            for r in range(n):
                s = idx[ia + r]
                a = buf[s]
                d = _dunary(op, a, buf[o + r])
                if d == 0.0:
                    continue
                for j in range(q):
                    g = cb[o + r, j]
                    if g != 0.0:
                        cb[s, j] += g * d
        else:
            if not act:
                continue
            for r in range(n):
                sa = idx[ia + r]
                sb = idx[ib + r]
                da, db = _dbinary(op, buf[sa], buf[sb], buf[o + r])
                _pull2(cb, o + r, sa, sb, da, db, act)


@kernel(inline="always")
def _jacobian_into(code, idx, ptr, col, val, buf, x, meta, cg, rg, gather, data, fx):  # type: ignore[no-untyped-def]  # pragma: no cover
    """One Jacobian in one call: values, seeded sweeps and the gather of ``J``'s nonzeros.

    ``buf`` is a fresh copy of the template (overwritten). ``meta`` is ``[x_slot, out_slot,
    m, n_saved, p, q]``; ``cg`` (``rg``) the column (row) groups, -1 where unseeded, empty
    without forward (reverse) colours. ``gather[k] >= 0`` reads nonzero ``k`` from the
    tangent block (flat index), ``~gather[k]`` from the cotangent block. ``fx`` receives the
    value. Returns False, with ``data`` unfilled, when a value or an entry is not finite (the
    caller then takes the chain engine, as :class:`~sparsejac.ad.tape.Tape` does, or the
    unfused sweeps, whose non-finite entries the plan mends from the other mode:
    :func:`sparsejac.engines.mend_non_finite`).
    """
    x_slot = meta[0]
    out_slot = meta[1]
    m = meta[2]
    n_saved = meta[3]
    p = meta[4]
    q = meta[5]
    for i in range(x.size):
        buf[x_slot + i] = x[i]
    saved = np.empty(n_saved if q > 0 else 0)
    tb = np.zeros((buf.size, p))
    for k in range(cg.size):
        if cg[k] >= 0:
            tb[x_slot + k, cg[k]] = 1.0
    run_forward(code, idx, ptr, col, val, buf, tb, saved)
    for i in range(buf.size):
        if not math.isfinite(buf[i]):
            return False
    for i in range(m):
        fx[i] = buf[out_slot + i]
    cb = np.zeros((buf.size, q))
    if q > 0:
        for k in range(rg.size):
            if rg[k] >= 0:
                cb[out_slot + k, rg[k]] = 1.0
        run_reverse(code, idx, ptr, col, val, buf, cb, saved)
    tf = tb.ravel()
    cf = cb.ravel()
    for k in range(gather.size):
        g = gather[k]
        data[k] = tf[g] if g >= 0 else cf[~g]
        if not math.isfinite(data[k]):  # a singular point: the other mode may give it
            return False
    return True


@kernel()
def jacobian_packed(ints, floats, x, pv, y, data, fx, fy):  # type: ignore[no-untyped-def]  # pragma: no cover
    """:func:`_jacobian_into` with its constant arguments packed into two arrays.

    Fewer arguments to pass; the parameter values ``pv`` are written into their slots, and
    (``y`` not empty) the value of the program at a second point ``y`` goes into ``fy`` (what
    ``verify`` compares with a real call).

    ``ints`` starts with ``[x_slot, out_slot, m, n_saved, p, q]`` and then the
    ``(offset, length)`` of ``code`` (flat), ``idx``, ``ptr``, ``col``, ``cg``, ``rg``,
    ``gather`` and the parameters' ``(slot, size)`` pairs within it; ``floats`` is the template
    buffer followed by ``val``, split at ``ints[22]``.
    """
    h = 6
    code = ints[ints[h]:ints[h] + ints[h + 1]].reshape((-1, 6))
    idx = ints[ints[h + 2]:ints[h + 2] + ints[h + 3]]
    ptr = ints[ints[h + 4]:ints[h + 4] + ints[h + 5]]
    col = ints[ints[h + 6]:ints[h + 6] + ints[h + 7]]
    cg = ints[ints[h + 8]:ints[h + 8] + ints[h + 9]]
    rg = ints[ints[h + 10]:ints[h + 10] + ints[h + 11]]
    gather = ints[ints[h + 12]:ints[h + 12] + ints[h + 13]]
    pslots = ints[ints[h + 14]:ints[h + 14] + ints[h + 15]]
    split = ints[h + 16]
    val = floats[split:]
    base = floats[:split].copy()
    k = 0
    for i in range(0, pslots.size, 2):
        if pslots[i] < 0:  # a parameter the program does not read
            k += pslots[i + 1]
            continue
        for r in range(pslots[i + 1]):
            base[pslots[i] + r] = pv[k]
            k += 1
    if y.size:
        buf = base.copy()
        for i in range(y.size):
            buf[ints[0] + i] = y[i]
        run_forward(code, idx, ptr, col, val, buf, np.zeros((buf.size, 0)), np.empty(0))
        for i in range(fy.size):
            fy[i] = buf[ints[1] + i]
    return _jacobian_into(code, idx, ptr, col, val, base, x, ints[:h], cg, rg, gather, data,
                          fx)


@kernel()
def jacobian_packed0(ints, floats, x, data, fx):  # type: ignore[no-untyped-def]  # pragma: no cover
    """:func:`jacobian_packed` without parameters or a second point.

    Three arguments fewer to dispatch; inside compiled code the inner call costs nothing.
    """
    none = np.empty(0)
    return jacobian_packed(ints, floats, x, none, none, data, fx, none)


def pack(meta: np.ndarray, code: np.ndarray, idx: np.ndarray, ptr: np.ndarray,
         col: np.ndarray, val: np.ndarray, template: np.ndarray, cg: np.ndarray,
         rg: np.ndarray, gather: np.ndarray, pslots: np.ndarray
         ) -> tuple[np.ndarray, np.ndarray]:
    """The ``ints`` and ``floats`` of :func:`jacobian_packed`."""
    parts = [code.reshape(-1), idx, ptr, col, cg, rg, gather, pslots]
    head = 6 + 2 * len(parts) + 1
    offsets = np.cumsum([head] + [a.size for a in parts])
    header = [int(v) for v in meta[:6]]
    for o, a in zip(offsets[:-1], parts, strict=True):
        header += [int(o), a.size]
    header.append(template.size)
    ints = np.concatenate([np.array(header, dtype=np.int64)]
                          + [np.asarray(a, dtype=np.int64) for a in parts])
    floats = np.concatenate([template, val]).astype(np.float64)
    return ints, floats


@kernel(interpret=True)  # one pass over the tape
def seed_rows(block, start, groups):  # type: ignore[no-untyped-def]  # pragma: no cover
    """``block[start + k, groups[k]] = 1`` for every seeded ``k`` (group >= 0)."""
    for k in range(groups.size):
        g = groups[k]
        if g >= 0:
            block[start + k, g] = 1.0


def empty_table() -> tuple[np.ndarray, ...]:
    """An instruction table with no instructions (for tests)."""
    return (np.zeros((0, 6), np.int64), np.zeros(0, np.int64), np.zeros(1, np.int64),
            np.zeros(0, np.int64), np.zeros(0))
