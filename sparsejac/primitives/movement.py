"""Data movement: every numpy call that only moves, copies or drops elements.

One mechanism serves them all, the *position trick*: the handler calls the
numpy function twice, once on the operands' *values* and once on integer *position* arrays
(operand ``k`` replaced by ``offset_k + 1 + arange(size_k).reshape(shape_k)``; constants by
zeros). The position result says, for every output element, which operand element it came
from (``0``: a constant or a fill value such as ``np.pad``'s). That index is the whole
primitive :data:`GATHER`:

* linearize: a 0/1 selection matrix per operand (the source of truth, from which
  ``sparsejac.primitives.derive`` derives every rule);
* fast paths, measured faster than the derived sparse products by ``benchmarks/rules.py``:
  the pattern gathers the rows of the operands' dependency matrices, the jvp gathers the
  columns of the tangent blocks, the vjp scatter-adds the cotangent back (a plain assignment
  when no element is read twice).

So adding a data-movement function is one ``register_movement`` line, as long as the function
treats integer arrays exactly as it treats float arrays (true of every one listed here).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from sparsejac.errors import UnsupportedPrimitiveError
from sparsejac.numeric import is_arange, shared_arange
from sparsejac.primitives import depsets
from sparsejac.primitives.core import (
    Deps,
    LocalJac,
    Primitive,
    find_trace,
    public_name,
    register_function,
)
from sparsejac.tracing.program import Node, Trace, Var
from sparsejac.tracing.tracer import Tracer, concretize

__all__ = ["GATHER", "GatherPlan", "gather_from_positions", "is_writeable", "position_range",
           "register_movement"]


@dataclass
class _OperandPlan:
    """Which output elements come from one operand, and from which of its elements."""

    sel: np.ndarray  # positions in the (flat) output
    src: np.ndarray  # positions in the (flat) operand
    size: int
    # sort-based scatter-add plan, for operands read more than once (broadcast_to, tile);
    # made on first use: only reverse mode needs it
    _injective: bool | None = None
    order: np.ndarray | None = None
    starts: np.ndarray | None = None
    uniq: np.ndarray | None = None

    @property
    def injective(self) -> bool:
        """Whether no operand element is read twice (else ``order``/``starts``/``uniq``)."""
        if self._injective is None:
            src, size = self.src, self.size
            # np.unique sorts; a bincount answers "is any element read twice" in O(n)
            self._injective = not src.size or int(np.bincount(src, minlength=size).max()) <= 1
            if not self._injective:
                order = np.argsort(src, kind="stable")
                s = src[order]
                starts = np.flatnonzero(np.r_[True, s[1:] != s[:-1]]) if s.size else s
                self.order, self.starts, self.uniq = order, starts, s[starts]
        return self._injective


@dataclass
class GatherPlan:
    """Static description of a gather: ``out.flat[i] = concat(operands).flat[index[i]]``."""

    index: np.ndarray  # int64, -1 where the value is a fill value
    shape: tuple[int, ...]
    dtype: np.dtype[Any]
    sizes: tuple[int, ...]
    fill_mask: np.ndarray | None  # bool, where index == -1 (None if nowhere)
    fill_values: np.ndarray | None
    identity: bool  # a pure reshape of a single operand
    _operands: list[_OperandPlan] | None = field(default=None, repr=False)
    #: the numpy call itself, for replays (a view where numpy gives one, e.g. slicing)
    replay: Callable[[Sequence[Any]], Any] | None = field(default=None, repr=False)

    @property
    def size(self) -> int:
        """Number of output elements."""
        return int(self.index.size)

    def release_caches(self) -> None:
        """Drop the operand plans (rebuilt on next use): a prepared engine is done with them."""
        self._operands = None

    @property
    def operands(self) -> list[_OperandPlan]:
        """Per-operand gather/scatter plans (built on first use: detection never needs them)."""
        if self._operands is None:
            self._operands = _operand_plans(self.index, self.sizes)
        return self._operands


def _operand_plans(index: np.ndarray, sizes: Sequence[int]) -> list[_OperandPlan]:
    if len(sizes) == 1:
        if not (index < 0).any():  # every output reads the operand:
            # one shared read-only arange, and the index itself (no copies of nnz size)
            return [_OperandPlan(sel=shared_arange(index.size), src=index, size=sizes[0])]
        sel = np.flatnonzero(index >= 0)
        return [_OperandPlan(sel=sel, src=index[sel], size=sizes[0])]
    # many operands (element writes merged: one per block written): each output's operand
    # found by one search, and the outputs grouped by one stable sort, not one pass per operand
    starts = np.cumsum([0, *sizes])
    sel_all = np.flatnonzero(index >= 0)
    owner = np.searchsorted(starts, index[sel_all], side="right") - 1
    order = np.argsort(owner, kind="stable")
    sel_sorted, owner_sorted = sel_all[order], owner[order]
    bounds = np.searchsorted(owner_sorted, np.arange(len(sizes) + 1))
    plans = []
    for k, size in enumerate(sizes):
        sel = sel_sorted[bounds[k]:bounds[k + 1]]
        plans.append(_OperandPlan(sel=sel, src=index[sel] - starts[k], size=size))
    return plans


class Gather(Primitive):
    """``out = concat(operands).flat[index]`` with fill values where ``index == -1``."""

    name = "gather"

    def impl(self, *vals: Any, plan: GatherPlan, **params: Any) -> np.ndarray:
        """Gather the operand values."""
        if plan.replay is not None:
            return np.asarray(plan.replay(vals))
        if plan.identity:
            return np.reshape(vals[0], plan.shape)
        flat = (np.ravel(vals[0]) if len(vals) == 1
                else np.concatenate([np.ravel(v) for v in vals]))
        if plan.fill_mask is None:
            return np.take(flat, plan.index).reshape(plan.shape)
        out = np.empty(plan.size, dtype=plan.dtype)
        keep = ~plan.fill_mask
        out[keep] = flat[plan.index[keep]]
        out[plan.fill_mask] = plan.fill_values
        return out.reshape(plan.shape)

    def pattern(self, node: Node, deps: Sequence[Deps | None], local: bool) -> Deps | None:
        """Rows of the operands' dependency matrices, gathered."""
        plan: GatherPlan = node.params["plan"]
        if plan.identity:
            return deps[0]
        live = [d for d in deps if d is not None]
        if not live:
            return None
        n = live[0].shape[1]
        blocks = [d if d is not None else depsets.empty(s, n)
                  for d, s in zip(deps, plan.sizes, strict=True)]
        stacked = blocks[0] if len(blocks) == 1 else _vstack(blocks)
        return depsets.take_rows(stacked, plan.index)

    def jvp(
        self, node: Node, vals: Sequence[Any], tangents: Sequence[np.ndarray | None], out: Any
    ) -> np.ndarray | None:
        """Columns of the tangent blocks, gathered."""
        plan: GatherPlan = node.params["plan"]
        live = [(k, t) for k, t in enumerate(tangents) if t is not None]
        if not live:
            return None
        p = live[0][1].shape[0]
        if plan.identity:
            return live[0][1].reshape((p, *plan.shape))
        if len(tangents) == 1 and plan.fill_mask is None:
            t2 = live[0][1].reshape(p, -1)
            return np.take(t2, plan.index, axis=1).reshape((p, *plan.shape))
        res = np.zeros((p, plan.size))
        for k, t in live:
            op = plan.operands[k]
            res[:, op.sel] = t.reshape(p, -1)[:, op.src]
        return res.reshape((p, *plan.shape))

    def vjp(
        self, node: Node, vals: Sequence[Any], out: Any, ct: np.ndarray
    ) -> list[np.ndarray | None]:
        """Scatter-add of the cotangent block into each active operand."""
        plan: GatherPlan = node.params["plan"]
        q = ct.shape[0]
        res: list[np.ndarray | None] = []
        for k, var in enumerate(node.inputs):
            if not var.active:
                res.append(None)
                continue
            if plan.identity:
                res.append(ct.reshape((q, *var.shape)))
                continue
            op = plan.operands[k]
            c2 = ct.reshape(q, -1)
            g = np.zeros((q, op.size))
            if op.injective:
                g[:, op.src] = c2[:, op.sel]
            elif op.src.size:
                assert op.order is not None
                assert op.starts is not None
                picked = c2[:, op.sel[op.order]]
                g[:, op.uniq] = np.add.reduceat(picked, op.starts, axis=1)
            res.append(g.reshape((q, *var.shape)))
        return res

    def linearize(self, node: Node) -> list[LocalJac | None] | None:
        """Selection matrices with constant entries 1."""
        plan: GatherPlan = node.params["plan"]
        # the operand plans are not kept: a recording needs each node's once, and keeping
        # them would hold two index arrays per gather until the recording ends
        ops = plan._operands
        res: list[LocalJac | None] = []
        for k, var in enumerate(node.inputs):
            if not var.active:
                res.append(None)
            elif plan.identity:
                ar = shared_arange(plan.size)
                res.append(LocalJac(ar, ar, const=1.0))
            else:
                if ops is None:
                    ops = _operand_plans(plan.index, plan.sizes)
                op = ops[k]
                res.append(LocalJac(op.sel.astype(np.int64, copy=False),
                                    op.src.astype(np.int64, copy=False), const=1.0))
        return res


GATHER = Gather()


def _vstack(blocks: Sequence[Deps]) -> Deps:
    return depsets.vstack(blocks)


# ---------------------------------------------------------------------------------------
# building gathers from a numpy call
# ---------------------------------------------------------------------------------------


def gather_from_positions(trace: Trace, in_vars: Sequence[Var], positions: Any, value: Any,
                          replay: Callable[[Sequence[Any]], Any] | None = None) -> Any:
    """Record the gather whose position result is ``positions`` and value is ``value``.

    ``positions`` holds ``1 + flat index into concat(in_vars)``, or 0 for fill values.
    ``replay(operand_values)``, if given, recomputes the value with the original numpy call.
    """
    positions = np.asarray(positions)
    value = np.asarray(value)
    if positions.shape != value.shape:  # pragma: no cover - a handler bug, not a user error
        raise AssertionError(f"position result {positions.shape} != value {value.shape}")
    if not in_vars:
        return Tracer(trace, trace.const(value))
    index = np.asarray(positions, dtype=np.int64).ravel() - 1  # one pass: a new array
    fill = index < 0
    has_fill = bool(fill.any())
    sizes = tuple(v.size for v in in_vars)
    identity = len(in_vars) == 1 and not has_fill and is_arange(index, sizes[0])
    plan = GatherPlan(
        index=index,
        shape=value.shape,
        dtype=value.dtype,
        sizes=sizes,
        fill_mask=fill if has_fill else None,
        fill_values=np.ascontiguousarray(value.ravel()[fill]) if has_fill else None,
        identity=identity,
        replay=replay,
    )
    return Tracer(trace, trace.emit(GATHER, tuple(in_vars), {"plan": plan}, value))


Spec = Callable[[tuple[Any, ...], dict[str, Any]],
                tuple[list[Any], Callable[[list[Any]], tuple[tuple[Any, ...], dict[str, Any]]]]]


def _is_leaf(a: Any) -> bool:
    return not isinstance(a, (list, tuple))


def _flatten(tree: Any) -> tuple[list[Any], Callable[[list[Any]], Any]]:
    """Leaves of nested lists/tuples, and the function that rebuilds the nesting."""
    if _is_leaf(tree):
        return [tree], lambda leaves: leaves[0]
    parts = [_flatten(t) for t in tree]
    counts = [len(p[0]) for p in parts]
    leaves = [leaf for p in parts for leaf in p[0]]
    fns = [p[1] for p in parts]  # (not the leaves: see first_arg)
    kind = type(tree)

    def rebuild(new: list[Any]) -> Any:
        out, i = [], 0
        for fn, c in zip(fns, counts, strict=True):
            out.append(fn(new[i:i + c]))
            i += c
        return kind(out) if kind is tuple else out

    return leaves, rebuild


def _operand(a: Any) -> Any:
    """An array_like operand: a list mixing traced values and numbers becomes a traced array."""
    if isinstance(a, (list, tuple)) and _contains_tracer(a):
        from sparsejac.primitives.creation import as_traced_array

        return as_traced_array(a)
    return a


# The rebuild functions keep only the arguments that are not operands: a gather's replay keeps
# its rebuild for the program's life, and an operand (a Tracer, which refers to its trace and
# through it to every node) would make each program a reference cycle, freed only by Python's
# cyclic collector (0.35 s for a power flow of 25,000 recorded operations).


def first_arg(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """Spec: the first positional argument is the one array operand."""
    rest = args[1:]
    return [_operand(args[0])], lambda ops: ((ops[0], *rest), kwargs)


def sequence_arg(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """Spec: the first positional argument is a (nested) sequence of operands."""
    leaves, rebuild = _flatten(args[0])
    rest = args[1:]
    return leaves, lambda ops: ((rebuild(ops), *rest), kwargs)


def all_args(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """Spec: every positional argument is an operand (``atleast_1d(*arys)``)."""
    return [_operand(a) for a in args], lambda ops: (tuple(ops), kwargs)


def args_at(*positions: int) -> Spec:
    """Spec: the positional arguments at ``positions`` are operands."""

    def spec(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        at = [i for i in positions if i < len(args)]
        ops = [_operand(args[i]) for i in at]
        template = [None if i in at else a for i, a in enumerate(args)]

        def rebuild(new: list[Any]) -> tuple[tuple[Any, ...], dict[str, Any]]:
            a = list(template)
            for i, v in zip(at, new, strict=True):
                a[i] = v
            return tuple(a), kwargs

        return ops, rebuild

    return spec


def apply_movement(
    func: Callable[..., Any], name: str, args: tuple[Any, ...], kwargs: dict[str, Any],
    spec: Spec, position_kwargs: Callable[..., dict[str, Any]] | None = None,
) -> Any:
    """Trace ``func(*args, **kwargs)`` as one gather per output array."""
    leaves, rebuild0 = spec(args, kwargs)
    args, kwargs = rebuild0(leaves)  # operands as the spec normalised them (lists lifted)
    trace = find_trace(leaves)

    # Tracers outside the operands (a traced shift, a traced index array) must be concrete:
    # allowed in local mode, refused in global mode.
    def clean(a: Any, what: str) -> Any:
        return a if _holds_leaf(a, leaves) else concretize(a, what)

    args = tuple(clean(a, f"an argument of {name}") for a in args)
    kwargs = {k: clean(v, f"the argument `{k}` of {name}") for k, v in kwargs.items()}
    leaves, rebuild = spec(args, kwargs)

    pos_leaves, val_leaves, in_vars = [], [], []
    offset = 1
    # ravel/reshape in memory order ("K", "A") follow the operand's layout: so do positions
    layout = func in (np.ravel, np.reshape) and any(
        isinstance(v, str) and v in ("A", "K") for v in (*args[1:], *kwargs.values()))
    for leaf in leaves:
        if isinstance(leaf, Tracer) and not leaf._var.is_const:
            var = leaf._var
            pos = position_range(offset, var.size).reshape(var.shape)
            pos_leaves.append(_same_layout(pos, var.value) if layout else pos)
            offset += var.size
            val_leaves.append(var.value)
            in_vars.append(var)
        else:
            val = leaf._var.value if isinstance(leaf, Tracer) else leaf
            val_leaves.append(val)
            pos_leaves.append(np.zeros(np.shape(val), dtype=np.int64))
    a_pos, k_pos = rebuild(pos_leaves)
    a_val, k_val = rebuild(val_leaves)
    extra = position_kwargs(*args, **kwargs) if position_kwargs is not None else {}
    positions = func(*a_pos, **{**k_pos, **extra})
    value = func(*a_val, **k_val)
    traced_at = [i for i, leaf in enumerate(leaves)
                 if isinstance(leaf, Tracer) and not leaf._var.is_const]
    const_leaves = list(val_leaves)

    def replay(vals: Sequence[Any], item: int | None = None) -> Any:
        leaves_now = list(const_leaves)
        for i, v in zip(traced_at, vals, strict=True):
            leaves_now[i] = v
        a, k = rebuild(leaves_now)
        res = func(*a, **k)
        return res if item is None else res[item]

    if isinstance(value, (list, tuple)):
        result: Any = type(value)(
            gather_from_positions(trace, in_vars, p, v, functools.partial(replay, item=i))
            for i, (p, v) in enumerate(zip(positions, value, strict=True))
        )
    else:
        result = gather_from_positions(trace, in_vars, positions, value, replay)
    _link_views(func, leaves, val_leaves, rebuild, value, result)
    return result


def _same_layout(pos: np.ndarray, val: Any) -> np.ndarray:
    """``pos`` in an array with ``val``'s strides (in elements), when numpy can mimic them.

    A call whose result depends on memory order (``U.T.ravel(order="K")``) then reads the
    positions in the order it reads the values. Otherwise ``pos`` itself (the one real call
    of ``f`` after the trace compares values, and refuses what differs).
    """
    if not isinstance(val, np.ndarray) or val.flags.c_contiguous or not val.size or any(
            s % val.itemsize for s in val.strides):
        return pos
    steps = [s // val.itemsize for s in val.strides]
    lo = sum(min(0, s * (d - 1)) for s, d in zip(steps, val.shape, strict=True))
    hi = sum(max(0, s * (d - 1)) for s, d in zip(steps, val.shape, strict=True))
    if hi - lo + 1 < val.size:  # broadcast or overlapping: no layout to mimic
        return pos
    buf = np.empty(hi - lo + 1, dtype=pos.dtype)
    out = np.lib.stride_tricks.as_strided(buf[-lo:], val.shape,
                                          tuple(s * buf.itemsize for s in steps))
    out[...] = pos
    return out if np.array_equal(out, pos) else pos


_POSITIONS: dict[tuple[int, int], np.ndarray] = {}


def position_range(offset: int, size: int) -> np.ndarray:
    """``arange(offset, offset + size)``, read-only and kept for the next call.

    ``x[i]`` in a loop over a large array would otherwise build the whole position array at
    every access (quadratic tracing time for element loops).
    """
    key = (offset, size)
    pos = _POSITIONS.get(key)
    if pos is None:
        if len(_POSITIONS) >= 16:
            _POSITIONS.clear()
        pos = np.arange(offset, offset + size, dtype=np.int64)
        pos.setflags(write=False)
        _POSITIONS[key] = pos
    return pos


def _link_views(func: Callable[..., Any], leaves: list[Any], val_leaves: list[Any],
                rebuild: Callable[[list[Any]], Any], value: Any, result: Any) -> None:
    """Where numpy returned a view of an array operand, record the aliasing.

    Writes through the view then reach the operand and vice versa (:mod:`.views`). Every
    result is checked against every traced operand (``np.broadcast_arrays(a, b)`` returns a
    view of each); a result sharing memory with several traced operands takes no writes.
    """
    arrays = [i for i, leaf in enumerate(leaves) if isinstance(leaf, Tracer)]
    if not arrays:
        return
    from sparsejac.primitives import views

    multi = isinstance(value, (list, tuple))
    for item, (v, r) in enumerate(zip(value if multi else (value,),
                                      result if multi else (result,), strict=True)):
        owners = [k for k in arrays if views.is_view_of(v, val_leaves[k])]
        if not owners:
            continue
        k = owners[0]
        single = all(leaves[j] is leaves[k] for j in owners)
        index = functools.partial(_view_index, func, rebuild, val_leaves, k,
                                  item if multi else None)
        views.link_view(leaves[k], r, index, single and is_writeable(v))


def is_writeable(v: np.ndarray) -> bool:
    """Whether numpy lets ``v`` be written, read without numpy's FutureWarning.

    ``np.broadcast_arrays`` returns views that warn on write (read-only in future numpy);
    reading ``flags.writeable`` of one warns too. The array interface reports them read-only.
    """
    return not v.__array_interface__["data"][1]


def _view_index(func: Callable[..., Any], rebuild: Callable[[list[Any]], Any],
                val_leaves: list[Any], k: int, item: int | None) -> np.ndarray:
    """Flat position in operand ``k`` of every element of the (view) result."""
    shape = np.shape(val_leaves[k])
    leaves_now = list(val_leaves)
    leaves_now[k] = np.arange(int(np.prod(shape, dtype=np.int64))).reshape(shape)
    a, kw = rebuild(leaves_now)
    res = func(*a, **kw)
    return np.asarray(res if item is None else res[item])


def _holds_leaf(obj: Any, leaves: list[Any]) -> bool:
    if any(obj is leaf for leaf in leaves):
        return True
    if isinstance(obj, (list, tuple)):
        return any(_holds_leaf(o, leaves) for o in obj)
    return False


def _contains_tracer(obj: Any) -> bool:
    if isinstance(obj, Tracer):
        return not obj._var.is_const
    if isinstance(obj, (list, tuple)):
        return any(_contains_tracer(o) for o in obj)
    return False


def register_movement(
    func: Callable[..., Any], spec: Spec = first_arg, *, note: str = "",
    position_kwargs: Callable[..., dict[str, Any]] | None = None,
    check: Callable[..., None] | None = None,
) -> None:
    """Register a data-movement numpy function traced by positions.

    ``position_kwargs(*args, **kwargs)`` may override keyword arguments for the call on
    positions (``np.pad``'s ``constant_values`` must be 0 there: "no source").
    """
    name = public_name(func)

    def handler(*args: Any, **kwargs: Any) -> Any:
        if check is not None:
            check(*args, **kwargs)
        return apply_movement(func, name, args, kwargs, spec, position_kwargs)

    register_function(func, family="movement", via="gather", note=note)(handler)


# ---------------------------------------------------------------------------------------
# the table
# ---------------------------------------------------------------------------------------

_PAD_MODES = ("constant", "edge", "wrap", "reflect", "symmetric")


def _check_pad(array: Any, pad_width: Any, mode: Any = "constant", **kwargs: Any) -> None:
    if callable(mode) or mode not in _PAD_MODES:  # "empty": uninitialised values, no gather
        raise UnsupportedPrimitiveError(
            "numpy.pad", f"mode={mode!r}; supported modes are {list(_PAD_MODES)}"
        )
    if kwargs.get("reflect_type", "even") != "even":  # 2 * edge - x: not a gather
        raise UnsupportedPrimitiveError(
            "numpy.pad", f"reflect_type={kwargs['reflect_type']!r}; only 'even' (the default)")
    if _contains_tracer(kwargs.get("constant_values")):
        raise UnsupportedPrimitiveError("numpy.pad", "a traced `constant_values=`")


_f: Any
for _f in (
    np.reshape, np.ravel, np.transpose, np.swapaxes, np.moveaxis, np.rollaxis, np.squeeze,
    np.expand_dims, np.broadcast_to, np.roll, np.flip, np.fliplr, np.flipud, np.rot90,
    np.tile, np.repeat, np.diagonal, np.diag, np.diagflat, np.tril, np.triu, np.take,
    np.take_along_axis, np.copy, np.resize, np.delete, np.split, np.array_split, np.hsplit,
    np.vsplit, np.dsplit, np.matrix_transpose, np.permute_dims, np.unstack,
):
    register_movement(_f)

def _pad_positions(array: Any, pad_width: Any, mode: Any = "constant", **kwargs: Any
                   ) -> dict[str, Any]:
    return {"constant_values": 0} if mode == "constant" else {}


register_movement(np.pad, note=f"modes {', '.join(_PAD_MODES)}", check=_check_pad,
                  position_kwargs=_pad_positions)
register_movement(np.compress, args_at(1), note="constant condition")
register_movement(np.insert, args_at(0, 2))
register_movement(np.append, args_at(0, 1))
_SEQUENCE_FUNCS: tuple[Any, ...] = (np.concatenate, np.concat, np.stack, np.hstack, np.vstack,
                                    np.dstack, np.column_stack, np.block)
_ALL_ARGS_FUNCS: tuple[Any, ...] = (np.atleast_1d, np.atleast_2d, np.atleast_3d,
                                    np.broadcast_arrays, np.meshgrid)
for _g in _SEQUENCE_FUNCS:
    register_movement(_g, sequence_arg)
for _g in _ALL_ARGS_FUNCS:
    register_movement(_g, all_args)
