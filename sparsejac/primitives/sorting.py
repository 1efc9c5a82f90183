"""Value-dependent permutations: ``sort``, ``partition``, ``median``, ``percentile``, ``quantile``.

One primitive, :class:`SortPermute`, is a permutation of every lane along one axis chosen at
``x`` (``np.argsort`` or ``np.argpartition``). Its local Jacobian has the fixed structure of
the whole lane (every output of a lane may read every input of that lane, as the order can
change with ``x``) and the values of the permutation matrix at the current point, so:

* the *global* pattern is dense over the sorted axis, block-diagonal over the others;
* the *local* pattern is exact (the permutation at ``x``);
* prepared replays recompute the permutation at every point.

``median``, ``percentile`` and ``quantile`` (``method="linear"``, constant ``q``) are
composites: a sort followed by the linear interpolation numpy applies to the sorted lane.
``argsort`` has a zero derivative (its result indexes, as ``argmax`` does).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from sparsejac.errors import UnsupportedPrimitiveError
from sparsejac.primitives import depsets
from sparsejac.primitives.core import LocalJac, Primitive, bind, register_function
from sparsejac.primitives.core import Deps
from sparsejac.primitives.derive import derived_pattern
from sparsejac.primitives.reductions import _ZeroReduction
from sparsejac.tracing.program import Node
from sparsejac.tracing.tracer import Tracer

__all__ = ["SortPermute"]


def _lanes(shape: tuple[int, ...], axis: int) -> np.ndarray:
    """Flat positions of every element, as ``(lanes, length)`` with the axis last."""
    return np.moveaxis(np.arange(int(np.prod(shape)), dtype=np.int64).reshape(shape),
                       axis, -1).reshape(-1, shape[axis])


class SortPermute(Primitive):
    """``x`` permuted along ``axis`` by ``argsort`` (``kth=None``) or ``argpartition``."""

    name = "sort_permute"

    @staticmethod
    def _perm(x: np.ndarray, axis: int, kth: Any) -> np.ndarray:
        lanes = np.moveaxis(np.asarray(x), axis, -1).reshape(-1, np.shape(x)[axis])
        if kth is None:
            return np.argsort(lanes, axis=-1, kind="stable")
        return np.argpartition(lanes, kth, axis=-1)

    def impl(self, *vals: Any, axis: int, kth: Any = None, **params: Any) -> np.ndarray:
        """The sorted (or partitioned) array."""
        x = np.asarray(vals[0])
        if kth is None:
            return np.sort(x, axis=axis, kind="stable")
        return np.take_along_axis(x, np.argpartition(x, kth, axis=axis), axis=axis)

    def linearize(self, node: Node) -> list[LocalJac | None] | None:
        """Every lane's dense block, valued 1 where the permutation at ``x`` puts an input."""
        shape = node.out.shape
        axis, kth = node.params["axis"], node.params.get("kth")
        idx = _lanes(shape, axis)
        length = idx.shape[1]
        rows = np.broadcast_to(idx[:, :, None], (*idx.shape, length)).ravel()
        cols = np.broadcast_to(idx[:, None, :], (*idx.shape, length)).ravel()

        def dyn(vals: Sequence[Any], out: Any) -> np.ndarray:
            perm = self._perm(vals[0], axis, kth)
            hit = perm[:, :, None] == np.arange(length)[None, None, :]
            return hit.astype(np.float64).ravel()

        return [LocalJac(rows, cols, dyn=dyn)]

    def pattern(self, node: Node, deps: Sequence[Deps | None], local: bool) -> Deps | None:
        """Dense over each lane (global); the permutation at ``x`` (local)."""
        d = deps[0]
        if d is None:
            return None
        if not local:
            return derived_pattern(node, deps, local)
        axis, kth = node.params["axis"], node.params.get("kth")
        idx = _lanes(node.out.shape, axis)
        perm = self._perm(node.inputs[0].value, axis, kth)
        rows = np.empty(idx.size, dtype=np.int64)
        rows[idx.ravel()] = np.take_along_axis(idx, perm, axis=-1).ravel()
        return depsets.take_rows(d, rows)


SORT_PERMUTE = SortPermute()
ARGSORT = _ZeroReduction("argsort", np.argsort)


def _shape(a: Any) -> tuple[int, ...]:
    return tuple(np.shape(a._var.value if isinstance(a, Tracer) else a))


def _axis(a: Any, axis: Any, name: str) -> tuple[Any, int]:
    if axis is None:
        return np.ravel(a), 0
    nd = len(_shape(a))
    if not isinstance(axis, (int, np.integer)) or not -nd <= int(axis) < nd:
        raise UnsupportedPrimitiveError(name, f"`axis`={axis!r} (allowed: None or an int)")
    return a, int(axis) % nd


@register_function(np.sort, family="sorting", via="sort_permute",
                   note="global pattern dense along the axis; local pattern exact")
def _sort(a: Any, axis: Any = -1, kind: Any = None, order: Any = None, **kw: Any) -> Any:
    if order is not None:
        raise UnsupportedPrimitiveError("numpy.sort", "the `order=` argument")
    a, ax = _axis(a, axis, "numpy.sort")
    return bind(SORT_PERMUTE, (a,), {"axis": ax})


@register_function(np.partition, family="sorting", via="sort_permute",
                   note="argpartition's order; local pattern exact")
def _partition(a: Any, kth: Any, axis: Any = -1, kind: Any = "introselect",
               order: Any = None) -> Any:
    if order is not None or isinstance(kth, Tracer):
        raise UnsupportedPrimitiveError("numpy.partition", "`order=` or a traced `kth`")
    a, ax = _axis(a, axis, "numpy.partition")
    k = int(kth) if np.ndim(kth) == 0 else tuple(int(v) for v in np.ravel(kth))
    return bind(SORT_PERMUTE, (a,), {"axis": ax, "kth": k})


@register_function(np.argsort, family="sorting", via="argsort (zero derivative)",
                   note="indexing with it needs local detection")
def _argsort(a: Any, axis: Any = -1, kind: Any = None, order: Any = None, **kw: Any) -> Any:
    if order is not None:
        raise UnsupportedPrimitiveError("numpy.argsort", "the `order=` argument")
    return bind(ARGSORT, (a,), {"axis": axis, "kind": "stable"})


def _quantile_sorted(s: Any, q: np.ndarray, ax: int, keepdims: bool) -> Any:
    """numpy's ``method="linear"`` on a lane already sorted along ``ax``."""
    n = _shape(s)[ax]
    virtual = q * (n - 1)
    lo = np.floor(virtual).astype(np.int64)
    lo = np.clip(lo, 0, n - 1)
    hi = np.clip(lo + 1, 0, n - 1)
    frac = virtual - lo
    a_lo = np.moveaxis(np.take(s, lo.ravel(), axis=ax), ax, 0)
    a_hi = np.moveaxis(np.take(s, hi.ravel(), axis=ax), ax, 0)
    g = frac.ravel().reshape((-1,) + (1,) * (len(_shape(s)) - 1))
    diff = a_hi - a_lo
    # numpy's _lerp: a + (b - a) * t, and b - (b - a) * (1 - t) for t >= 0.5
    res = np.where(g >= 0.5, a_hi - diff * (1 - g), a_lo + diff * g)
    res = res.reshape(q.shape + res.shape[1:])
    if keepdims:
        res = np.expand_dims(res, ax + q.ndim)
    return res


def _quantile(name: str, a: Any, q: Any, axis: Any, method: str, keepdims: bool,
              extra: dict[str, Any]) -> Any:
    if isinstance(q, Tracer) or method != "linear" or extra.get("out") is not None or \
            extra.get("overwrite_input") or extra.get("weights") is not None:
        raise UnsupportedPrimitiveError(
            name, f"this form (allowed: constant `q`, method='linear'; got method={method!r})")
    if axis is not None and not isinstance(axis, (int, np.integer)):
        raise UnsupportedPrimitiveError(name, f"`axis`={axis!r} (allowed: None or an int)")
    nd = len(_shape(a))
    if axis is None:
        s = np.sort(np.ravel(a))
        res = _quantile_sorted(s, np.asarray(q, dtype=np.float64), 0, False)
        if keepdims:
            res = np.reshape(res, np.shape(res) + (1,) * nd)
        return res
    ax = int(axis) % nd
    return _quantile_sorted(np.sort(a, axis=ax), np.asarray(q, dtype=np.float64), ax,
                            keepdims)


@register_function(np.quantile, family="sorting", via="sort_permute + lerp",
                   note="constant q, method='linear'")
def _np_quantile(a: Any, q: Any, axis: Any = None, out: Any = None,
                 overwrite_input: bool = False, method: str = "linear",
                 keepdims: bool = False, **kw: Any) -> Any:
    return _quantile("numpy.quantile", a, q, axis, method, keepdims,
                     {"out": out, "overwrite_input": overwrite_input, **kw})


@register_function(np.percentile, family="sorting", via="sort_permute + lerp",
                   note="constant q, method='linear'")
def _np_percentile(a: Any, q: Any, axis: Any = None, out: Any = None,
                   overwrite_input: bool = False, method: str = "linear",
                   keepdims: bool = False, **kw: Any) -> Any:
    if isinstance(q, Tracer):
        raise UnsupportedPrimitiveError("numpy.percentile", "a traced `q`")
    return _quantile("numpy.percentile", a, np.asarray(q, dtype=np.float64) / 100.0, axis,
                     method, keepdims, {"out": out, "overwrite_input": overwrite_input, **kw})


@register_function(np.median, family="sorting", via="sort_permute",
                   note="mean of the middle element(s)")
def _np_median(a: Any, axis: Any = None, out: Any = None, overwrite_input: bool = False,
               keepdims: bool = False) -> Any:
    if out is not None:
        raise UnsupportedPrimitiveError("numpy.median", "the `out=` argument")
    if axis is not None and not isinstance(axis, (int, np.integer)):
        raise UnsupportedPrimitiveError("numpy.median", f"`axis`={axis!r} (allowed: None or an int)")
    nd = len(_shape(a))
    if axis is None:
        s, ax = np.sort(np.ravel(a)), 0
    else:
        ax = int(axis) % nd
        s = np.sort(a, axis=ax)
    n = _shape(s)[ax]
    mid = n // 2
    if n % 2:
        res = np.take(s, mid, axis=ax)
    else:
        res = np.mean(np.take(s, [mid - 1, mid], axis=ax), axis=ax)
    if keepdims:
        res = np.expand_dims(res, tuple(range(nd)) if axis is None else ax)
    return res
