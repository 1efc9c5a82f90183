"""The tape's fused Jacobian as generated straight-line Python: :func:`straight_line`.

Before numba is loaded, a small tape's Jacobian ran its kernel's own loops in the interpreter:
about half a microsecond per slot, seed direction and instruction field, mostly spent on zero
tangents (HIRES, 8 unknowns: 240 µs a Jacobian, where ``f`` takes 3 µs). This module reads
the packed tape and colouring once (:func:`~sparsejac.ad._tape.jacobian_packed`'s ``ints``
and ``floats``) and writes a Python function that does only the work that can be nonzero:
one statement per value, one term per tangent or cotangent that the seeds reach, constants
and unit partials folded in. Its arithmetic is the kernel's, operation for operation and in
the same order (IEEE ``+ - * /``, and the kernel's own scalar functions, run by the
interpreter, for the C library's), so the values are the kernel's bit for bit, with one
exception handled at run time:

* the kernel skips a term whose tangent or partial is zero (the convention of
  :func:`sparsejac.numeric.mul0`: zero times an infinite partial contributes nothing); the
  generated code adds every term, which is the same wherever the term is finite (an
  accumulator that starts at ``+0.0`` is unchanged by adding ``±0.0``). Where a Jacobian
  entry comes out infinite or NaN, the call returns ``None`` and the caller takes the
  kernel (as it does where Python raises: a float division by zero, ``**`` or
  ``math.sinh`` overflowing).

Generating and compiling costs about :data:`UNITS_PER_TERM` budget units per term
(:func:`terms`), more for long functions (:func:`price`);
:class:`~sparsejac.ad.fused.Fused` generates once the interpreted calls have cost that much
(rent, then buy), so a process computing one Jacobian does not pay for it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from sparsejac.ad import _tape as k

__all__ = ["MAX_TERMS", "UNITS_PER_TERM", "Parts", "parts", "price", "straight_line", "terms"]

#: the largest tape (slots times seed directions plus one) generated as Python: about what
#: the process's fallback budget pays for (a kinetics loop of 66 species and 917
#: instructions, 20,896 terms: 19 ms to generate, then 38 µs a Jacobian instead of 5 ms)
MAX_TERMS = 100_000
#: budget units (about 10 ns) of generating and compiling one term: 90 to 240 measured
UNITS_PER_TERM = 200
#: the most terms of one sum in one statement (Python's compiler recurses per operator)
_CHUNK = 64

Expr = float | str  # a constant, or the name of a local variable of the generated function


def price(n_terms: int) -> int:
    """Budget units of generating and compiling the code of a tape of ``n_terms`` terms.

    :data:`UNITS_PER_TERM` a term, more for long functions (Python's compiler slows on
    them: 415 units a term measured at 25,000 terms, 670 at 82,000).

    Examples
    --------
    >>> from sparsejac.ad._tape_python import price
    >>> price(500), price(80_000)
    (101250, 48000000)
    """
    return int(UNITS_PER_TERM * n_terms * (1 + n_terms / 40_000))


def terms(ints: np.ndarray) -> int:
    """The size the generated code grows with: slots times (seed directions + 1)."""
    return int(ints[22]) * (int(ints[4]) + int(ints[5]) + 1)


def _scalar(fn: Any) -> Any:
    return getattr(fn, "python", fn)


def _lit(v: Expr) -> str:
    """A constant as Python source (exact: ``repr`` of a float round-trips)."""
    if isinstance(v, str):
        return v
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "(-inf)"
    text = repr(v)
    return f"({text})" if text.startswith("-") else text


class _Unsupported(Exception):
    """The tape has an instruction the generator does not write (``SOLVE``)."""


class _Writer:
    """Symbolic run of the fused kernel: which values, tangents and cotangents exist."""

    def __init__(self, ints: np.ndarray, floats: np.ndarray) -> None:
        h = 6
        part = [ints[ints[h + 2 * i]:ints[h + 2 * i] + ints[h + 2 * i + 1]] for i in range(8)]
        self.code = part[0].reshape((-1, 6)).tolist()
        self.idx = part[1].tolist()
        self.ptr = part[2].tolist()
        self.col = part[3].tolist()
        self.cg, self.rg, self.gather, self.pslots = (a.tolist() for a in part[4:])
        split = int(ints[h + 16])
        self.template = floats[:split].tolist()
        self.val = floats[split:].tolist()
        self.x_slot, self.out_slot, self.m, _, self.p, self.q = (int(v) for v in ints[:6])
        self.lines: list[str] = []
        self.x_names: list[str] = []
        self.count = 0
        #: slot -> its value now (a name; absent: the template's constant)
        self.value: dict[int, Expr] = {}
        #: per instruction, per row: the value expressions its partials read
        self.rows: list[list[tuple[Expr, ...]]] = []
        self.partials: dict[tuple[int, int], tuple[Expr, Expr]] = {}

    def new(self, prefix: str) -> str:
        self.count += 1
        return f"{prefix}{self.count}"

    def get(self, slot: int) -> Expr:
        got = self.value.get(slot)
        return self.template[slot] if got is None else got

    def assign(self, prefix: str, source: str) -> str:
        name = self.new(prefix)
        self.lines.append(f"{name} = {source}")
        return name


def _values(w: _Writer, n_x: int) -> list[Expr]:
    """Statements computing every value of the program; each slot's final value.

    The generated functions take the flat point as ``x`` and the parameters as ``pv``.
    """
    if n_x:
        names = w.x_names = [w.new("x") for _ in range(n_x)]
        w.lines.append(f"{', '.join(names)}, = x.tolist()")
        for i, name in enumerate(names):
            w.value[w.x_slot + i] = name
    at = 0
    read: list[tuple[int, int]] = []
    for i in range(0, len(w.pslots), 2):
        slot, size = w.pslots[i], w.pslots[i + 1]
        if slot >= 0:
            read += [(slot + r, at + r) for r in range(size)]
        at += size
    if read:
        w.lines.append("pl = pv.tolist()")
        for slot, j in read:
            w.value[slot] = w.assign("p", f"pl[{j}]")
    for row in w.code:
        w.rows.append(_value_rows(w, *row))
    return [w.get(s) for s in range(len(w.template))]


_UNARY_VALUE = {k.NEG: "-{a}", k.POS: "{a}", k.ABS: "abs({a})", k.SQUARE: "{a} * {a}",
                k.EXP: "(inf if {a} > EXP_MAX else exp({a}))", k.SIN: "sin({a})",
                k.COS: "cos({a})",
                k.SQRT: "(sqrt({a}) if {a} >= 0.0 else nan)", k.SIGN_TIE: "TIE({a})"}
_BINARY_VALUE = {k.ADD: "{a} + {b}", k.SUB: "{a} - {b}", k.MUL: "{a} * {b}",
                 k.DIV: "{a} / {b}"}


def _value_rows(w: _Writer, op: int, o: int, n: int, ia: int, ib: int, act: int
                ) -> list[tuple[Expr, ...]]:
    """One instruction's value statements; per row what its partials read."""
    idx = w.idx
    rows: list[tuple[Expr, ...]] = []
    if op == k.GATHER:
        for r in range(n):
            w.value[o + idx[ib + r]] = w.get(idx[ia + r])
        return rows
    if op == k.SOLVE:
        raise _Unsupported
    outs = set(range(o, o + n))
    if not outs.isdisjoint(w.value):  # an output written before: not the kernel's one pass
        raise _Unsupported
    if op == k.SELECT:
        for r in range(n):
            cond, a, b = (w.get(idx[ia + j * n + r]) for j in range(3))
            rows.append((cond,))
            if isinstance(cond, float):
                w.value[o + r] = a if cond != 0.0 else b
            else:
                w.value[o + r] = w.assign("v", f"{_lit(a)} if {cond} != 0.0 else {_lit(b)}")
        _check_disjoint(outs, [idx[ia + r] for r in range(3 * n)])
        return rows
    if op in (k.LINEAR, k.BILINEAR):
        step = 1 if op == k.LINEAR else 2
        for r in range(n):
            lo, hi = w.ptr[ia + r], w.ptr[ia + r + 1]
            _check_disjoint(outs, w.col[lo:hi])
            acc = w.get(o + r)
            parts = [f"{_lit(w.val[e])} * {_lit(w.get(w.col[e]))}" if step == 1 else
                     f"{_lit(w.val[e])} * {_lit(w.get(w.col[e]))} * {_lit(w.get(w.col[e + 1]))}"
                     for e in range(lo, hi, step)]
            rows.append(tuple(w.get(w.col[e]) for e in range(lo, hi)))
            if not parts:  # the constant alone
                continue
            for i in range(0, len(parts), _CHUNK):
                acc = w.assign("v", " + ".join([_lit(acc), *parts[i:i + _CHUNK]]))
            w.value[o + r] = acc
        return rows
    if op < k.BINARY:
        _check_disjoint(outs, [idx[ia + r] for r in range(n)])
        for r in range(n):
            a = w.get(idx[ia + r])
            form = _UNARY_VALUE.get(op)
            source = (form.format(a=_lit(a)) if form is not None
                      else f"U({op}, {_lit(a)})")
            out = w.assign("v", source)
            w.value[o + r] = out
            rows.append((a, out))
        return rows
    _check_disjoint(outs, [idx[ia + r] for r in range(n)] + [idx[ib + r] for r in range(n)])
    for r in range(n):
        a, b = w.get(idx[ia + r]), w.get(idx[ib + r])
        form = _BINARY_VALUE.get(op)
        source = (form.format(a=_lit(a), b=_lit(b)) if form is not None
                  else f"B({op}, {_lit(a)}, {_lit(b)})")
        out = w.assign("v", source)
        w.value[o + r] = out
        rows.append((a, b, out))
    return rows


def _check_disjoint(outs: set[int], ins: list[int]) -> None:
    if not outs.isdisjoint(ins):
        raise _Unsupported


def _unary_partial(w: _Writer, op: int, a: Expr, out: Expr) -> Expr:
    """``_dunary(op, a, out)``: a constant, or a name assigned by a new statement."""
    if op == k.NEG:
        return -1.0
    if op == k.POS:
        return 1.0
    if op in (k.NOT, k.SIGN, k.SIGN_TIE):
        return 0.0
    if op == k.EXP:
        return out
    forms = {k.SQUARE: "2.0 * {a}", k.RECIP: "-{o} * {o}",
             k.TAN: "1.0 + {o} * {o}", k.SIN: "cos({a})", k.COS: "-sin({a})",
             k.SQRT: "0.5 / ({o} + 0.0)", k.LOG: "1.0 / ({a} + 0.0)",
             k.EXPM1: "(inf if {a} > EXP_MAX else exp({a}))"}
    form = forms.get(op)
    source = (form.format(a=_lit(a), o=_lit(out)) if form is not None
              else f"DU({op}, {_lit(a)}, {_lit(out)})")
    return w.assign("d", source)


def _binary_partials(w: _Writer, op: int, a: Expr, b: Expr, out: Expr) -> tuple[Expr, Expr]:
    """``_dbinary(op, a, b, out)``: constants or names."""
    if op == k.ADD:
        return 1.0, 1.0
    if op == k.SUB:
        return 1.0, -1.0
    if op == k.MUL:
        return b, a
    if k.LESS <= op <= k.XOR:
        return 0.0, 0.0
    if op == k.DIV:
        da = 1.0 / b if isinstance(b, float) and b != 0.0 else w.assign("d", f"1.0 / {_lit(b)}")
        return da, w.assign("d", f"-({_lit(out)} / {_lit(b)})")
    da_, db_ = w.new("d"), w.new("d")
    w.lines.append(f"{da_}, {db_} = DB({op}, {_lit(a)}, {_lit(b)}, {_lit(out)})")
    return da_, db_


def _partials(w: _Writer, i: int, r: int) -> tuple[Expr, Expr]:
    """Row ``r`` of instruction ``i``'s partials (written once, for both sweeps)."""
    got = w.partials.get((i, r))
    if got is None:
        op = w.code[i][0]
        row = w.rows[i][r]
        if op < k.BINARY:
            got = (_unary_partial(w, op, row[0], row[1]), 0.0)
        else:
            got = _binary_partials(w, op, *row)
        w.partials[(i, r)] = got
    return got


class _Sums:
    """Tangents (or cotangents) of slots, per seed direction: absent ones are exactly zero.

    A sum the generated code starts writes ``0.0 + ...`` where its first term is a product
    (the kernel's accumulators start at +0.0, so a product that is -0.0 becomes +0.0 there
    too); every name so held is therefore never -0.0, and adding a term that is ±0.0 leaves
    a sum unchanged, as the kernel's skipping it does.
    """

    def __init__(self, w: _Writer, prefix: str) -> None:
        self.w = w
        self.prefix = prefix
        #: slot -> {direction: its tangent}
        self.rows: dict[int, dict[int, Expr]] = {}

    def row(self, slot: int) -> dict[int, Expr]:
        return self.rows.get(slot) or {}

    def get(self, slot: int, j: int) -> Expr | None:
        return self.row(slot).get(j)

    def put(self, slot: int, row: dict[int, Expr]) -> None:
        """Slot ``slot``'s tangents become ``row`` (a copy: rows change in place)."""
        if row:
            self.rows[slot] = dict(row)
        else:
            self.rows.pop(slot, None)

    def add_all(self, slot: int, terms: dict[int, list[Expr]]) -> None:
        for j, got in terms.items():
            self.add(slot, j, got)

    def add(self, slot: int, j: int, terms: list[Expr]) -> None:
        """``state += term`` for each term, in order: names, products or constants.

        Constants alone are added now (the same IEEE sums the kernel does at each call).
        """
        if not terms:
            return
        row = self.rows.setdefault(slot, {})
        old = row.get(j)
        if all(isinstance(t, float) for t in terms) and not isinstance(old, str):
            acc = 0.0 if old is None else old
            for t in terms:
                acc += t  # type: ignore[operator]
            if acc != 0.0:
                row[j] = acc
            else:  # +0.0 (a sum from +0.0): absent
                row.pop(j, None)
            return
        first = terms[0]
        if old is None and len(terms) == 1 and _bare(first):
            row[j] = first
            return
        head = "0.0" if old is None else _lit(old)
        if old is None and _bare(first):
            head, terms = _lit(first), terms[1:]
        acc_: str = head
        for i in range(0, len(terms), _CHUNK):
            acc_ = self.w.assign(self.prefix,
                                 " + ".join([acc_, *(_lit(t) for t in terms[i:i + _CHUNK])]))
        row[j] = acc_


def _bare(term: Expr) -> bool:
    """Whether ``term`` is a held name or a nonzero constant (never -0.0), not a product."""
    return isinstance(term, float) or term.isidentifier()


def _times(t: Expr, d: Expr) -> Expr | None:
    """The term ``t * d`` (None where it is zero for sure: the kernel skips it)."""
    if (isinstance(t, float) and t == 0.0) or (isinstance(d, float) and d == 0.0):
        return None
    if isinstance(t, float) and isinstance(d, float):
        v = t * d
        return v if v != 0.0 else None
    if t == 1.0:  # a partial: it may be -0.0 where the kernel skips it (not a bare name)
        return f"+{d}"
    if d == 1.0:
        return t
    if d == -1.0:
        return f"-{_lit(t)}"
    return f"{_lit(t)} * {_lit(d)}"


def _collect(into: dict[int, list[Expr]], row: dict[int, Expr], d: Expr) -> None:
    """``into[j] += [t * d]`` for every direction ``j`` of ``row`` (zero terms left out)."""
    for j, t in row.items():
        term = _times(t, d)
        if term is not None:
            into.setdefault(j, []).append(term)


def _forward(w: _Writer) -> _Sums:
    """Tangent statements: ``tb`` of the kernel with its zero entries left out."""
    tb = _Sums(w, "t")
    for k_ in range(len(w.cg)):
        if w.cg[k_] >= 0:
            tb.put(w.x_slot + k_, {w.cg[k_]: 1.0})
    if not w.p:
        return tb
    idx = w.idx
    for i, (op, o, n, ia, ib, act) in enumerate(w.code):
        if op == k.GATHER:
            for r in range(n):
                tb.put(o + idx[ib + r], tb.row(idx[ia + r]))
        elif op == k.SELECT:
            if act:
                for r in range(n):
                    _select_forward(w, tb, w.rows[i][r][0], o + r, tb.row(idx[ia + n + r]),
                                    tb.row(idx[ia + 2 * n + r]))
        elif op in (k.LINEAR, k.BILINEAR):
            if op == k.BILINEAR and not act:
                continue
            for r in range(n):
                terms: dict[int, list[Expr]] = {}
                for s, d in _linear_partials(w, op, act, ia + r):
                    _collect(terms, tb.row(s), d)
                tb.add_all(o + r, terms)
        elif act:
            for r in range(n):
                ins = ((1, idx[ia + r]), (2, idx[ib + r])) if op >= k.BINARY else \
                    ((1, idx[ia + r]),)
                if not any(act & bit and tb.row(s) for bit, s in ins):
                    continue
                ds = _partials(w, i, r)
                terms = {}
                for (bit, s), d in zip(ins, ds, strict=False):
                    if act & bit:
                        _collect(terms, tb.row(s), d)
                tb.add_all(o + r, terms)
    return tb


def _select_forward(w: _Writer, tb: _Sums, cond: Expr, out: int, ta: dict[int, Expr],
                    tb_: dict[int, Expr]) -> None:
    """``np.where``'s tangents: the chosen operand's, decided at each call."""
    if isinstance(cond, float):
        tb.put(out, ta if cond != 0.0 else tb_)
        return
    row: dict[int, Expr] = {}
    for j in sorted(set(ta) | set(tb_)):
        a, b = ta.get(j, 0.0), tb_.get(j, 0.0)
        row[j] = a if isinstance(a, float) and a == b else \
            w.assign("t", f"{_lit(a)} if {cond} != 0.0 else {_lit(b)}")
    tb.put(out, row)


def _linear_partials(w: _Writer, op: int, act: int, at: int) -> list[tuple[int, Expr]]:
    """A ``LINEAR`` or ``BILINEAR`` row's operands and partials, in the kernel's order."""
    lo, hi = w.ptr[at], w.ptr[at + 1]
    if op == k.LINEAR:
        return [(w.col[e], w.val[e]) for e in range(lo, hi) if w.val[e] != 0.0]
    out: list[tuple[int, Expr]] = []
    for e in range(lo, hi, 2):
        sa, sb = w.col[e], w.col[e + 1]
        if act & 1:
            out.append((sa, _bilinear_factor(w, e, sb)))
        if act & 2:
            out.append((sb, _bilinear_factor(w, e, sa)))
    return out


def _bilinear_factor(w: _Writer, e: int, other: int) -> Expr:
    """``val[e] * buf[other]``: a BILINEAR term's partial (a constant or a new name)."""
    c, v = w.val[e], w.get(other)
    if isinstance(v, float):
        return float(c * v)
    key = (-1 - e, other)
    got = w.partials.get(key)
    if got is None:
        got = (w.assign("d", f"{_lit(c)} * {v}"), 0.0)
        w.partials[key] = got
    return got[0]


def _reverse(w: _Writer) -> _Sums:
    """Cotangent statements: ``cb`` of the kernel with its zero entries left out."""
    cb = _Sums(w, "c")
    if not w.q:
        return cb
    for k_ in range(len(w.rg)):
        if w.rg[k_] >= 0:
            cb.put(w.out_slot + k_, {w.rg[k_]: 1.0})
    idx = w.idx
    for i in range(len(w.code) - 1, -1, -1):
        op, o, n, ia, ib, act = w.code[i]
        if op == k.GATHER:  # one row after the other: a shared buffer's slots recur
            for r in range(n):
                dst = o + idx[ib + r]
                g = cb.row(dst)
                cb.put(dst, {})
                cb.add_all(idx[ia + r], {j: [v] for j, v in g.items()})
            continue
        if op == k.SOLVE:
            raise _Unsupported
        pending: dict[int, dict[int, list[Expr]]] = {}  # each target's terms, in order
        for r in range(n):
            g = cb.row(o + r)
            if not g:
                continue
            if op == k.SELECT:
                cond = w.rows[i][r][0]
                for side in (1, 2):
                    if act & side:
                        _select_reverse(pending, cond, side, idx[ia + side * n + r], g)
            elif op in (k.LINEAR, k.BILINEAR):
                if op == k.BILINEAR and not act:
                    break
                for s, d in _linear_partials(w, op, act, ia + r):
                    _collect(pending.setdefault(s, {}), g, d)
            elif act:
                ds = _partials(w, i, r)
                ins = (idx[ia + r], idx[ib + r]) if op >= k.BINARY else (idx[ia + r],)
                for bit, s, d in zip((1, 2), ins, ds, strict=False):
                    if act & bit:
                        _collect(pending.setdefault(s, {}), g, d)
        for s, terms in pending.items():
            cb.add_all(s, terms)
    return cb


def _select_reverse(pending: dict[int, dict[int, list[Expr]]], cond: Expr, side: int,
                    src: int, g: dict[int, Expr]) -> None:
    """``np.where``'s cotangents: to the operand chosen at each call."""
    if isinstance(cond, float):
        if (cond != 0.0) == (side == 1):
            _collect(pending.setdefault(src, {}), g, 1.0)
        return
    test = "!=" if side == 1 else "=="
    into = pending.setdefault(src, {})
    for j, v in g.items():
        into.setdefault(j, []).append(f"({_lit(v)} if {cond} {test} 0.0 else 0.0)")


def straight_line(ints: np.ndarray, floats: np.ndarray, n_x: int
                  ) -> tuple[Callable[..., Any], Callable[..., Any]] | None:
    """``(jacobian, values)`` generated for a packed tape, or None where it cannot be.

    ``jacobian(x, pv, data, fx)`` is :func:`~sparsejac.ad._tape.jacobian_packed` without a
    second point: False where a value is not finite, None where a Jacobian entry is not
    finite (the kernel's own code decides those), else True. ``values(y, pv, fy)`` writes
    the program's value at ``y``. ``n_x`` is the size of the flat point.

    Examples
    --------
    >>> import numpy as np
    >>> import sparsejac
    >>> from sparsejac.ad import Tape
    >>> from sparsejac.ad._tape_python import straight_line
    >>> from sparsejac.tracing import trace
    >>> f = lambda x: np.exp(x[1:]) * x[:-1]
    >>> x = np.array([1.0, 2.0, 3.0])
    >>> c = sparsejac.color(sparsejac.jacobian_sparsity(f, x), "column")
    >>> ints, floats = Tape.build(trace(f, x)).fused_call(c)[2:4]
    >>> jac, values = straight_line(ints, floats, 3)
    >>> data, fx = np.empty(4), np.empty(2)
    >>> jac(x, np.zeros(0), data, fx), fx.round(3)
    (True, array([ 7.389, 40.171]))
    """
    if terms(ints) > MAX_TERMS:
        return None
    try:
        return _generate(ints, floats, n_x)
    except _Unsupported:
        return None


def _namespace() -> dict[str, Any]:
    return {"exp": math.exp, "EXP_MAX": k.EXP_MAX, "sin": math.sin, "cos": math.cos,
            "sqrt": math.sqrt,
            "isfinite": math.isfinite, "inf": math.inf, "nan": math.nan,
            "U": _scalar(k._unary), "B": _scalar(k._binary), "DU": _scalar(k._dunary),
            "DB": _scalar(k._dbinary), "TIE": _tie}


def _tie(a: float) -> float:
    """``np.sign`` of a tie-checked element; a tie (exactly 0) declines the call.

    (The kernel's own code then answers it, whose NaN value makes the call decline again,
    and the chain engine refuses the tie by name.)
    """
    if a == 0.0:
        raise ArithmeticError("a tie")
    return 1.0 if a > 0.0 else -1.0 if a < 0.0 else a


@dataclass
class Parts:
    """The generated statements of a tape's Jacobian, for the two code writers to assemble.

    (:func:`straight_line`, Python; :mod:`sparsejac.ad.native`, numba.) ``values``: the
    statements of the values (the point read from ``x``: ``x_names``, the parameters from
    ``pl``, ``pv``'s elements, where ``reads_pv``); ``runtime``: the names whose finiteness
    the kernel checks; ``derivatives``: the tangent and cotangent statements; ``outs`` and
    ``entries``: the expressions of ``f``'s value and of ``J``'s nonzeros (CSR order).
    """

    x_names: list[str]
    reads_pv: bool
    values: list[str]
    runtime: list[str]
    derivatives: list[str]
    outs: list[str]
    entries: list[str]


def parts(ints: np.ndarray, floats: np.ndarray, n_x: int) -> Parts | None:
    """The statements of a packed tape's Jacobian, or None where they cannot be generated.

    Examples
    --------
    >>> import numpy as np
    >>> import sparsejac
    >>> from sparsejac.ad import Tape
    >>> from sparsejac.ad._tape_python import parts
    >>> from sparsejac.tracing import trace
    >>> f = lambda x: x[1:] * x[:-1]
    >>> x = np.array([1.0, 2.0, 3.0])
    >>> c = sparsejac.color(sparsejac.jacobian_sparsity(f, x), "column")
    >>> got = parts(*Tape.build(trace(f, x)).fused_call(c)[2:4], 3)
    >>> got.x_names, got.outs
    (['x1', 'x2', 'x3'], ['v4', 'v5'])
    """
    if terms(ints) > MAX_TERMS:
        return None
    try:
        w = _Writer(ints, floats)
        finals = _values(w, n_x)
        if any(isinstance(v, float) and not math.isfinite(v) for v in finals):
            raise _Unsupported  # the kernel declines every call
        start = 1 if n_x else 0
        reads_pv = start < len(w.lines) and w.lines[start] == "pl = pv.tolist()"
        values = w.lines[start + reads_pv:]
        w.lines = []
        tb = _forward(w)
        cb = _reverse(w)
    except _Unsupported:
        return None
    p, q = w.p, w.q
    entries = []
    for g in w.gather:
        got = tb.get(g // p, g % p) if g >= 0 else cb.get((~g) // q, (~g) % q)
        entries.append(_lit(0.0 if got is None else got))
    return Parts(x_names=w.x_names, reads_pv=reads_pv, values=values,
                 runtime=sorted({v for v in finals if isinstance(v, str)}),
                 derivatives=w.lines, outs=[_lit(finals[w.out_slot + i]) for i in range(w.m)],
                 entries=entries)


def _generate(ints: np.ndarray, floats: np.ndarray, n_x: int
              ) -> tuple[Callable[..., Any], Callable[..., Any]]:
    got = parts(ints, floats, n_x)
    if got is None:
        raise _Unsupported
    head = [f"{', '.join(got.x_names)}, = x.tolist()"] if got.x_names else []
    head += ["pl = pv.tolist()"] if got.reads_pv else []
    lines = head + got.values
    value_lines = list(lines)
    runtime = ", ".join(got.runtime)
    outs = ", ".join(got.outs)
    if runtime:  # the kernel's check of every slot; summed first (one C call), exact after
        lines.append(f"if not isfinite(sum(({runtime},))):")
        lines.append(f"    if not all(map(isfinite, ({runtime},))): return False")
    lines += got.derivatives
    lines += [f"fx[:] = ({outs},)" if outs else "pass",
              f"r = ({', '.join(got.entries)},)" if got.entries else "r = ()",
              "data[:] = r", "return True if isfinite(sum(r)) else None"]
    body = "\n    ".join(lines)
    vbody = "\n    ".join([*value_lines, f"fy[:] = ({outs},)" if outs else "pass"])
    return (_compiled(f"def jacobian(x, pv, data, fx):\n    {body}\n", "jacobian"),
            _Later(f"def values(x, pv, fy):\n    {vbody}\n"))


def _compiled(source: str, name: str) -> Callable[..., Any]:
    space = _namespace()
    exec(compile(source, "<sparsejac tape>", "exec"), space)  # the code written here
    return space[name]  # type: ignore[no-any-return]


class _Later:
    """The values function, compiled at its first call (verify's second point only)."""

    __slots__ = ("fn", "source")

    def __init__(self, source: str) -> None:
        self.source = source
        self.fn: Callable[..., Any] | None = None

    def __call__(self, x: np.ndarray, pv: np.ndarray, fy: np.ndarray) -> None:
        if self.fn is None:
            self.fn = _compiled(self.source, "values")
        self.fn(x, pv, fy)
