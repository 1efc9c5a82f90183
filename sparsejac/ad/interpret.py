"""Forward and reverse interpreters over a recorded program, with matrix seeds.

Forward mode carries, for every active variable of shape ``s``, a tangent block of shape
``(p, *s)``: the seed axis leads, so elementwise rules multiply by plain broadcasting.
Reverse mode walks the nodes backwards with cotangent blocks ``(q, *s)``, pulling back all
``q`` seeds at once. Both read each primitive's rule from the registry; neither knows about
colouring.

Both interpreters can *replay* the program at a new point (``x=``, ``params=``): the primal
values are recomputed with each primitive's ``impl``. That is valid only for programs that did
not consult values while tracing (``Program.value_dependent`` is False).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from sparsejac.numeric import _PLAIN_PRODUCTS
from sparsejac.primitives.elementwise import _PARTIALS
from sparsejac.primitives.movement import GATHER
from sparsejac.tracing import Program
from sparsejac.tracing.program import Node
from sparsejac.tracing.walk import Values, check_block, dead_after, pull_back

__all__ = ["InterpretedLinearization", "evaluate", "program_jvp", "program_vjp"]


def evaluate(prog: Program, x: Any = None, params: Sequence[Any] | None = None
             ) -> dict[int, Any]:
    """Primal values of every variable (by id): the trace-time ones, or a replay at ``x``.

    Parameters
    ----------
    prog : Program
        From :func:`sparsejac.tracing.trace`.
    x : array_like, optional
        A new point (shape of the traced ``x``); default: the values recorded at the trace.
    params : sequence, optional
        New values of the program's parameters (an ODE's ``t``).

    Returns
    -------
    dict
        ``{var.id: value}`` for the input, the parameters and every node's output.

    Raises
    ------
    ValueError
        Replaying a program that read values while it was traced (local mode).

    Examples
    --------
    >>> import numpy as np
    >>> from sparsejac.tracing import trace
    >>> from sparsejac.ad import evaluate
    >>> prog = trace(lambda x: x[1:] * x[:-1], np.array([1.0, 2.0, 3.0]))
    >>> evaluate(prog)[prog.out.id]                          # the values at the trace point
    array([2., 6.])
    >>> evaluate(prog, x=np.array([1.0, 1.0, 2.0]))[prog.out.id]  # a replay at a new x
    array([1., 2.])
    """
    return Values(prog, x, params).complete().vals


def program_jvp(
    prog: Program, tangent_x: np.ndarray, *, x: Any = None, params: Sequence[Any] | None = None,
    values: Values | None = None,
) -> tuple[Any, np.ndarray]:
    """``(f(x), t_out)``: ``t_out`` is ``(p, *out_shape)`` for ``tangent_x`` ``(p, *x_shape)``.

    Without ``x``/``params`` the trace-time values are used (no recomputation). This is the
    forward interpreter behind :func:`sparsejac.ad.jvp`, for a program recorded once.

    Parameters
    ----------
    prog : Program
        From :func:`sparsejac.tracing.trace`.
    tangent_x : ndarray, shape ``(p, *x_shape)``
        ``p`` tangent directions, the seed axis first.
    x : array_like, optional
        Replay at this point instead (global-mode programs only).
    params : sequence, optional
        New parameter values for the replay.
    values : Values, optional
        The program's values at the point, computed by an earlier call
        (``Values(prog, x, params).complete()``): read, not computed again (``x`` and
        ``params`` are then ignored). Several products at one point share one replay.

    Returns
    -------
    tuple
        ``(f(x), t_out)``; ``t_out[k]`` is ``J(x) @ tangent_x[k]`` in the output's shape.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsejac.tracing import trace
    >>> from sparsejac.ad import program_jvp
    >>> prog = trace(lambda x: x[1:] * x[:-1], np.array([1.0, 2.0, 3.0]))
    >>> out, t = program_jvp(prog, np.eye(3))   # three seeds: t[k] is column k of J
    >>> out, t.T
    (array([2., 6.]), array([[2., 1., 0.],
           [0., 3., 2.]]))
    """
    vals = Values(prog, x, params) if values is None else values
    plain = _PLAIN_PRODUCTS.set(True)  # (see InterpretedLinearization.jvp)
    try:
        out, t_out = _walk_jvp(prog, tangent_x, vals, values is None)
    finally:
        _PLAIN_PRODUCTS.reset(plain)
    if not np.isfinite(np.sum(t_out)):  # again, with mul0's zero times inf
        out, t_out = _walk_jvp(prog, tangent_x, vals, False)
    return out, t_out


def _walk_jvp(prog: Program, tangent_x: np.ndarray, vals: Values, replay: bool
              ) -> tuple[Any, np.ndarray]:
    """:func:`program_jvp`'s walk: the values computed as it goes (``replay``) or read."""
    p = tangent_x.shape[0]
    walk = vals.run() if replay else (
        (node, vals.args(node), vals[node.out]) for node in prog.nodes)
    tangents: dict[int, np.ndarray] = {prog.x.id: tangent_x}
    with np.errstate(all="ignore"):  # a replay's warnings would point at sparsejac's files
        for (node, args, out), dead in zip(walk, dead_after(prog), strict=True):
            if node.out.active:
                ts = [tangents.get(v.id) if v.active else None for v in node.inputs]
                t = node.prim.jvp(node, args, ts, out)
                if t is not None:
                    check_block("jvp", node, t, (p, *node.out.shape))
                    tangents[node.out.id] = t
            for vid in dead:  # free tangents nobody reads any more
                tangents.pop(vid, None)
    t_out = tangents.get(prog.out.id) if prog.out.active else None
    if t_out is None:
        t_out = np.zeros((p, *prog.out.shape))
    return vals[prog.out], t_out


def program_vjp(
    prog: Program, ct_out: np.ndarray, *, x: Any = None, params: Sequence[Any] | None = None
) -> tuple[Any, np.ndarray]:
    """``(f(x), ct_x)``: ``ct_x`` is ``(q, *x_shape)`` for ``ct_out`` ``(q, *out_shape)``.

    The reverse interpreter behind :func:`sparsejac.ad.vjp`: one pass over the primal values
    (recorded, or replayed at ``x``), then the nodes backwards with all ``q`` cotangents.

    Parameters
    ----------
    prog : Program
        From :func:`sparsejac.tracing.trace`.
    ct_out : ndarray, shape ``(q, *out_shape)``
        ``q`` output cotangents, the seed axis first.
    x : array_like, optional
        Replay at this point instead (global-mode programs only).
    params : sequence, optional
        New parameter values for the replay.

    Returns
    -------
    tuple
        ``(f(x), ct_x)``; ``ct_x[k]`` is ``ct_out[k] @ J(x)`` in the input's shape.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsejac.tracing import trace
    >>> from sparsejac.ad import program_vjp
    >>> prog = trace(lambda x: x[1:] * x[:-1], np.array([1.0, 2.0, 3.0]))
    >>> program_vjp(prog, np.eye(2))[1]          # two cotangent seeds: the rows of J
    array([[2., 1., 0.],
           [0., 3., 2.]])
    """
    vals = Values(prog, x, params).complete()
    q = ct_out.shape[0]
    cts = pull_back(prog, ct_out, _puller(vals, q))
    ct_x = _dense(cts.get(prog.x.id))
    if ct_x is None:
        ct_x = np.zeros((q, *prog.x.shape))
    return vals[prog.out], ct_x


#: a gather at most this fraction of its operand's size pulls back to entries (:class:`_Entries`)
SPARSE_GATHER = 0.25


class _Entries:
    """A cotangent block ``(q, *shape)`` kept as entries (positions, values), summed when used.

    An element loop reads ``x[i]`` once per element: a whole block of ``x``'s size per read
    made the reverse walk O(reads × n) (a finite-element residual assembled element by
    element, 10,201 unknowns: 11 s of a 33 s one-off Jacobian; found from outside). A small
    gather's cotangent is kept as its entries instead, contributions join their lists, and
    the block is made once, where a rule or the caller needs it (:func:`_dense`).
    """

    __array_ufunc__ = None  # (block + entries: numpy defers to __radd__)
    __slots__ = ("pos", "q", "shape", "vals")

    def __init__(self, q: int, shape: tuple[int, ...], pos: np.ndarray, vals: np.ndarray) -> None:
        self.q, self.shape = q, shape
        self.pos, self.vals = [pos], [vals]

    def __add__(self, other: Any) -> Any:
        if isinstance(other, _Entries):  # (pull_back's sum replaces self: joined in place)
            self.pos += other.pos
            self.vals += other.vals
            return self
        return self.__radd__(other)

    def __radd__(self, other: Any) -> np.ndarray:
        block = np.array(other, dtype=np.float64).reshape(self.q, -1)  # (a new sum: a copy)
        self._into(block)
        return block.reshape((self.q, *self.shape))

    def dense(self) -> np.ndarray:
        """The block."""
        block = np.zeros((self.q, int(np.prod(self.shape, dtype=np.int64))))
        self._into(block)
        return block.reshape((self.q, *self.shape))

    def _into(self, block: np.ndarray) -> None:
        pos = np.concatenate(self.pos)
        vals = np.concatenate(self.vals, axis=1)
        if self.q <= 8:  # a few rows: one bincount each (linear)
            for r in range(self.q):
                block[r] += np.bincount(pos, weights=vals[r], minlength=block.shape[1])
        else:
            np.add.at(block.T, pos, vals.T)


def _dense(ct: Any) -> Any:
    return ct.dense() if type(ct) is _Entries else ct


def _puller(vals: Values, q: int) -> Any:
    """The node rule of the reverse walks: ``vjp``, checked; small gathers to entries."""
    def pull(node: Node, ct: Any) -> list[Any]:
        ct = _dense(ct)
        if node.prim is GATHER and not node.params["plan"].identity:
            plan = node.params["plan"]
            ops = plan.operands
            if any(v.active and op.src.size <= SPARSE_GATHER * op.size
                   for v, op in zip(node.inputs, ops, strict=True)):
                c2 = ct.reshape(q, -1)
                return [None if not v.active else _Entries(q, v.shape, op.src, c2[:, op.sel])
                        if op.src.size <= SPARSE_GATHER * op.size else
                        _Entries(q, v.shape, op.src, c2[:, op.sel]).dense()
                        for v, op in zip(node.inputs, ops, strict=True)]
        grads: list[np.ndarray | None] = node.prim.vjp(node, vals.args(node), vals[node.out], ct)
        for var, g in zip(node.inputs, grads, strict=True):
            if g is not None and var.active:
                check_block("vjp", node, g, (q, *var.shape))
        return grads

    return pull


class InterpretedLinearization:
    """A recorded program linearised at one point, products by the interpreters' node rules.

    The primal values are computed once (the trace's own, or a replay at ``x``); each product
    is then one forward (reverse) walk of the nodes with the seeds, at the cost of about one
    evaluation of ``f`` per seed column. Unlike :class:`~sparsejac.ad.Linearization` it
    preaccumulates nothing, so a program whose Jacobian is dense through a rank-one term
    (``np.mean(x)`` broadcast back: n² entries) costs O(n) per product, not O(n²).

    Examples
    --------
    >>> import numpy as np
    >>> from sparsejac.tracing import trace
    >>> from sparsejac.ad import InterpretedLinearization
    >>> prog = trace(lambda x: x * np.mean(x), np.ones(3))
    >>> lin = InterpretedLinearization(prog, np.array([1.0, 2.0, 3.0]))
    >>> lin.value
    array([2., 4., 6.])
    >>> lin.jvp(np.array([[1.0], [0.0], [0.0]])).ravel()     # the first column of J
    array([2.33333333, 0.66666667, 1.        ])
    >>> lin.vjp(np.array([[1.0, 0.0, 0.0]])).ravel()         # the first row of J
    array([2.33333333, 0.33333333, 0.33333333])
    """

    def __init__(self, prog: Program, x: Any = None, params: Sequence[Any] | None = None
                 ) -> None:
        self._prog = prog
        self._vals = Values(prog, x, params).complete()
        self._dead = dead_after(prog)
        self._partials: dict[tuple[int, int], Any] = {}
        #: ``f(x)``
        self.value = self._vals[prog.out]

    def jvp(self, s: np.ndarray) -> np.ndarray:
        """``J(x) @ S`` for ``S`` of shape ``(n, p)``; returns ``(m, p)``.

        The elementwise partials are computed at the first product and kept; products are
        plain ones, and a product whose result is not finite is computed again with the
        zero-times-inf convention of :func:`~sparsejac.numeric.mul0` (a Newton–Krylov step
        asks for tens of products at one point: 0.4 -> 0.25 ms each on a 100 x 100 grid).
        """
        token = _PARTIALS.set(self._partials)
        try:
            plain = _PLAIN_PRODUCTS.set(True)
            try:
                with np.errstate(all="ignore"):
                    got = self._jvp(s)
            finally:
                _PLAIN_PRODUCTS.reset(plain)
            if not np.isfinite(np.sum(got)):
                got = self._jvp(s)
        finally:
            _PARTIALS.reset(token)
        return got

    def _jvp(self, s: np.ndarray) -> np.ndarray:
        prog, vals = self._prog, self._vals
        p = s.shape[1]
        tangents: dict[int, np.ndarray] = {
            prog.x.id: np.ascontiguousarray(np.asarray(s, dtype=np.float64).T).reshape(
                (p, *prog.x.shape))}
        for node, dead in zip(prog.nodes, self._dead, strict=True):
            if node.out.active:
                ts = [tangents.get(v.id) if v.active else None for v in node.inputs]
                if any(t is not None for t in ts):
                    t = node.prim.jvp(node, vals.args(node), ts, vals[node.out])
                    if t is not None:
                        check_block("jvp", node, t, (p, *node.out.shape))
                        tangents[node.out.id] = t
            for vid in dead:
                tangents.pop(vid, None)
        t_out = tangents.get(prog.out.id) if prog.out.active else None
        if t_out is None:
            return np.zeros((prog.out.size, p))
        return np.ascontiguousarray(np.reshape(t_out, (p, prog.out.size)).T)

    def vjp(self, w: np.ndarray) -> np.ndarray:
        """``W @ J(x)`` for ``W`` of shape ``(q, m)``; returns ``(q, n)``."""
        prog, vals = self._prog, self._vals
        q = w.shape[0]
        ct_out = np.asarray(w, dtype=np.float64).reshape((q, *prog.out.shape))
        ct_x = _dense(pull_back(prog, ct_out, _puller(vals, q)).get(prog.x.id))
        if ct_x is None:
            return np.zeros((q, prog.x.size))
        return np.reshape(ct_x, (q, prog.x.size))
