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

from sparsejac.tracing import Program

__all__ = ["evaluate", "program_jvp", "program_vjp"]


def _check_replay(prog: Program) -> None:
    if prog.value_dependent:
        raise ValueError(
            "this program read traced values while it was recorded (local mode), so it is valid "
            "at its trace point only and cannot be replayed at another x; trace it again"
        )


def evaluate(prog: Program, x: Any = None, params: Sequence[Any] | None = None
             ) -> dict[int, Any]:
    """Primal values of every variable (by id): the trace-time ones, or a replay at ``x``."""
    if x is None and params is None:
        vals: dict[int, Any] = {prog.x.id: prog.x.value}
        for p in prog.params:
            vals[p.id] = p.value
        for node in prog.nodes:
            vals[node.out.id] = node.out.value
        return vals
    _check_replay(prog)
    vals = {prog.x.id: prog.x.value if x is None else np.asarray(x, dtype=np.float64)}
    for var, val in zip(prog.params, params if params is not None else
                        [p.value for p in prog.params], strict=True):
        vals[var.id] = np.asarray(val)
    for node in prog.nodes:
        args = [vals[v.id] if v.id in vals else v.value for v in node.inputs]
        vals[node.out.id] = node.prim.impl(*args, **node.params)
    return vals


def _value(vals: dict[int, Any], var: Any) -> Any:
    return vals[var.id] if var.id in vals else var.value


def program_jvp(
    prog: Program, tangent_x: np.ndarray, *, x: Any = None, params: Sequence[Any] | None = None
) -> tuple[Any, np.ndarray]:
    """``(f(x), t_out)`` with ``t_out`` of shape ``(p, *out_shape)`` for ``tangent_x`` (p, *x_shape).

    Without ``x``/``params`` the trace-time values are used (no recomputation).
    """
    replay = x is not None or params is not None
    if replay:
        _check_replay(prog)
    p = tangent_x.shape[0]
    vals: dict[int, Any] = {prog.x.id: prog.x.value if x is None else np.asarray(x, np.float64)}
    if replay:
        for var, val in zip(prog.params, params if params is not None else
                            [q.value for q in prog.params], strict=True):
            vals[var.id] = np.asarray(val)
    tangents: dict[int, np.ndarray] = {prog.x.id: tangent_x}
    for node in prog.nodes:
        args = [_value(vals, v) for v in node.inputs]
        out = node.prim.impl(*args, **node.params) if replay else node.out.value
        vals[node.out.id] = out
        if not node.out.active:
            continue
        ts = [tangents.get(v.id) if v.active else None for v in node.inputs]
        t = node.prim.jvp(node, args, ts, out)
        if t is not None:
            if t.shape != (p, *node.out.shape):
                raise AssertionError(
                    f"jvp rule of {node.prim.name!r} returned shape {t.shape}, expected "
                    f"{(p, *node.out.shape)}"
                )
            tangents[node.out.id] = t
    out_val = _value(vals, prog.out)
    t_out = tangents.get(prog.out.id) if prog.out.active else None
    if t_out is None:
        t_out = np.zeros((p, *prog.out.shape))
    return out_val, t_out


def program_vjp(
    prog: Program, ct_out: np.ndarray, *, x: Any = None, params: Sequence[Any] | None = None
) -> tuple[Any, np.ndarray]:
    """``(f(x), ct_x)`` with ``ct_x`` of shape ``(q, *x_shape)`` for ``ct_out`` (q, *out_shape)."""
    vals = evaluate(prog, x, params)
    q = ct_out.shape[0]
    cts: dict[int, np.ndarray] = {}
    if prog.out.active:
        cts[prog.out.id] = ct_out
    for node in reversed(prog.nodes):
        if not node.out.active:
            continue
        ct = cts.pop(node.out.id, None)
        if ct is None:
            continue
        args = [_value(vals, v) for v in node.inputs]
        grads = node.prim.vjp(node, args, vals[node.out.id], ct)
        for var, g in zip(node.inputs, grads, strict=True):
            if g is None or not var.active:
                continue
            if g.shape != (q, *var.shape):
                raise AssertionError(
                    f"vjp rule of {node.prim.name!r} returned shape {g.shape} for an operand of "
                    f"shape {var.shape}, expected {(q, *var.shape)}"
                )
            prev = cts.get(var.id)
            cts[var.id] = g if prev is None else prev + g
    ct_x = cts.get(prog.x.id)
    if ct_x is None:
        ct_x = np.zeros((q, *prog.x.shape))
    return _value(vals, prog.out), ct_x
