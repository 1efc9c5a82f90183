"""Value-dependent selections: ``sort``, ``partition``, ``median``, ``quantile``, running extrema.

One primitive, :class:`SortPermute`, is a permutation of every lane along one axis chosen at
``x`` (``np.argsort`` or ``np.argpartition``). Its local Jacobian has the fixed structure of
the whole lane (every output of a lane may read every input of that lane, as the order can
change with ``x``) and the values of the permutation matrix at the current point, so:

* the *global* pattern is dense over the sorted axis, block-diagonal over the others;
* the *local* pattern is exact (the permutation at ``x``);
* prepared replays recompute the permutation at every point.

``median``, ``percentile`` and ``quantile`` (``method`` linear, lower, higher, nearest or
midpoint; constant ``q``) are composites: a sort followed by the interpolation numpy applies
to the sorted lane. ``argsort`` and ``argpartition`` have a zero derivative (their results
index, as ``argmax`` does).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from sparsejac.errors import UnsupportedPrimitiveError
from sparsejac.primitives import depsets
from sparsejac.primitives.core import (
    FUNCTIONS,
    Deps,
    LocalJac,
    Primitive,
    bind,
    register_function,
    register_ufunc,
)
from sparsejac.primitives.derive import derived_pattern
from sparsejac.primitives.reductions import _ZeroReduction
from sparsejac.tracing.program import Node
from sparsejac.tracing.tracer import Tracer

__all__ = ["SortPermute", "SortScatter"]


def _lanes(shape: tuple[int, ...], axis: int) -> np.ndarray:
    """Flat positions of every element, as ``(lanes, length)`` with the axis last."""
    lanes = int(np.prod(shape[:axis] + shape[axis + 1:], dtype=np.int64))  # (empty arrays too)
    return np.moveaxis(np.arange(int(np.prod(shape)), dtype=np.int64).reshape(shape),
                       axis, -1).reshape(lanes, shape[axis])


class SortPermute(Primitive):
    """Every lane along ``axis`` gathered by a selection chosen at ``x``.

    ``how`` is ``"sort"`` (``argsort``), ``("partition", kth)`` (``argpartition``),
    ``"maximum.accumulate"`` or ``"minimum.accumulate"`` (the running extremum: output ``i``
    is the lane's element at the last record position ``<= i``).
    """

    piecewise_constant = True

    name = "sort_permute"

    @staticmethod
    def _select(x: np.ndarray, axis: int, how: Any) -> np.ndarray:
        shape = np.shape(x)
        lanes = np.moveaxis(np.asarray(x), axis, -1).reshape(
            int(np.prod(shape[:axis] + shape[axis + 1:], dtype=np.int64)), shape[axis])
        if how == "sort":
            return np.argsort(lanes, axis=-1, kind="stable")
        if isinstance(how, tuple):
            return np.argpartition(lanes, how[1], axis=-1)
        acc = np.maximum if how == "maximum.accumulate" else np.minimum
        record = lanes == acc.accumulate(lanes, axis=-1)
        pos = np.where(record, np.arange(lanes.shape[1]), 0)
        return np.asarray(np.maximum.accumulate(pos, axis=-1))

    @staticmethod
    def _reach(how: Any, length: int) -> np.ndarray:
        """``(length, length)`` bool: which lane inputs an output may select, for any x."""
        if isinstance(how, str) and how.endswith("accumulate"):
            return np.tril(np.ones((length, length), dtype=bool))
        return np.ones((length, length), dtype=bool)

    def impl(self, *vals: Any, axis: int, how: Any = "sort", **params: Any) -> np.ndarray:
        """The sorted (partitioned, running-extremum) array."""
        x = np.asarray(vals[0])
        if how == "sort":
            return np.sort(x, axis=axis, kind="stable")
        if isinstance(how, tuple):
            return np.take_along_axis(x, np.argpartition(x, how[1], axis=axis), axis=axis)
        acc = np.maximum if how == "maximum.accumulate" else np.minimum
        return np.asarray(acc.accumulate(x, axis=axis))

    def linearize(self, node: Node) -> list[LocalJac | None] | None:
        """Every lane's reachable block, valued 1 where the selection at ``x`` reads."""
        axis, how = node.params["axis"], node.params.get("how", "sort")
        rows, cols, li, lj = self.lane_entries(node.out.shape, axis, how)

        def dyn(vals: Sequence[Any], out: Any) -> np.ndarray:
            return self.lane_hits(vals[0], axis, how, li, lj)

        return [LocalJac(rows, cols, dyn=dyn)]

    @classmethod
    def lane_hits(cls, x: Any, axis: int, how: Any, li: np.ndarray, lj: np.ndarray
                  ) -> np.ndarray:
        """The local Jacobian's values at ``x``: 1 where output ``li`` reads input ``lj``."""
        sel = cls._select(x, axis, how)
        hit: np.ndarray = (sel[:, li] == lj[None, :]).astype(np.float64)
        return hit.ravel()

    @classmethod
    def lane_entries(cls, shape: tuple[int, ...], axis: int, how: Any
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The local Jacobian's entries (flat output, flat input) and their lane positions."""
        idx = _lanes(shape, axis)
        li, lj = np.nonzero(cls._reach(how, idx.shape[1]))
        return idx[:, li].ravel(), idx[:, lj].ravel(), li, lj

    @classmethod
    def sources(cls, shape: tuple[int, ...], axis: int, how: Any, x: Any) -> np.ndarray:
        """For every output position (flat), the input position it reads at ``x``."""
        idx = _lanes(shape, axis)
        src = np.empty(idx.size, dtype=np.int64)
        src[idx.ravel()] = np.take_along_axis(idx, cls._select(x, axis, how), axis=-1).ravel()
        return src

    def _sources(self, node: Node, x: Any) -> np.ndarray:
        return self.sources(node.out.shape, node.params["axis"], node.params.get("how", "sort"), x)

    def jvp(
        self, node: Node, vals: Sequence[Any], tangents: Sequence[np.ndarray | None], out: Any
    ) -> np.ndarray | None:
        """The tangents gathered as the values are: O(p n).

        The derived rule would apply the local Jacobian's whole lanes (kept for the global
        structure), O(p n²): a prepared call of a dense Jacobian through ``np.sort`` at
        n = 2,000 took 0.15 s, now 0.03 s.
        """
        t = tangents[0]
        if t is None:
            return None
        p = t.shape[0]
        src = self._sources(node, vals[0])
        return np.take(t.reshape(p, -1), src, axis=1).reshape((p, *node.out.shape))

    def vjp(
        self, node: Node, vals: Sequence[Any], out: Any, ct: np.ndarray
    ) -> list[np.ndarray | None]:
        """The cotangents added back to the positions read.

        A permutation reads each input once; a running extremum reads one input for several
        outputs (summed).
        """
        if not node.inputs[0].active:
            return [None]
        q = ct.shape[0]
        src = self._sources(node, vals[0])
        g = np.zeros((q, src.size))
        how = node.params.get("how", "sort")
        if isinstance(how, str) and how.endswith("accumulate"):
            np.add.at(g.T, src, ct.reshape(q, -1).T)  # (rows of g.T: the positions)
        else:  # a permutation of every lane: each input read once
            g[:, src] = ct.reshape(q, -1)
        return [g.reshape((q, *node.inputs[0].shape))]

    def pulls_by_formula(self, node: Node) -> bool:
        """A recorded reverse sweep (second order) pulls back by :meth:`traced_cotangents`."""
        return True

    def traced_cotangents(self, node: Node, vals: Sequence[Any], out: Any, ct: Any
                          ) -> list[Any]:
        """The cotangent ``ct`` added back to the positions read, on traced values.

        One :class:`SortScatter` node: a Hessian-vector product through it costs O(n) per
        direction, where the lanes' whole local Jacobian would cost O(n²) (a prepared
        Hessian through ``np.sort`` at n = 500: 0.71 s a call before).
        """
        if not node.inputs[0].active:
            return [None]
        args = (ct.reshape(node.out.shape), vals[0])
        params = {"axis": node.params["axis"], "how": node.params.get("how", "sort")}
        if any(isinstance(a, Tracer) for a in args):
            return [bind(SORT_SCATTER, args, params)]
        return [SORT_SCATTER.impl(*args, **params)]

    def pattern(self, node: Node, deps: Sequence[Deps | None], local: bool) -> Deps | None:
        """The reachable block of each lane (global); the selection at ``x`` (local)."""
        d = deps[0]
        if d is None:
            return None
        if not local:
            glob: Deps | None = derived_pattern(node, deps, local)
            return glob
        return depsets.take_rows(d, self._sources(node, node.inputs[0].value))


class SortScatter(Primitive):
    """The pullback of :class:`SortPermute`: ``ct`` added back to the positions read at ``x``.

    Operands ``(ct, x)``: a cotangent of the selection's output and the selection's input.
    Linear in ``ct``, with the transpose of the selection's local Jacobian (the same lanes,
    valued at ``x``); no derivative with respect to ``x`` (the selection is constant around
    it). Recorded reverse sweeps (Hessians) use it for ``np.sort``, partitions and running
    extrema, so that their products are gathers and scatters.
    """

    piecewise_constant = True

    name = "sort_scatter"

    def impl(self, *vals: Any, axis: int, how: Any = "sort", **params: Any) -> np.ndarray:
        """``g[src[i]] += ct[i]`` for the selection ``src`` at ``x``."""
        ct, x = np.asarray(vals[0], dtype=np.float64), np.asarray(vals[1])
        src = SortPermute.sources(x.shape, axis, how, x)
        return self._scatter(ct.reshape(1, -1), src, how).reshape(x.shape)

    @staticmethod
    def _scatter(c: np.ndarray, src: np.ndarray, how: Any) -> np.ndarray:
        g = np.zeros((c.shape[0], src.size))
        if isinstance(how, str) and how.endswith("accumulate"):
            np.add.at(g.T, src, c.T)  # a running extremum reads one input for several outputs
        else:  # a permutation of every lane: each input read once
            g[:, src] = c
        return g

    def linearize(self, node: Node) -> list[LocalJac | None] | None:
        """The selection's local Jacobian transposed; none with respect to ``x``."""
        if not node.inputs[0].active:  # a constant cotangent: a value without derivative
            return [None, None]
        axis, how = node.params["axis"], node.params.get("how", "sort")
        rows, cols, li, lj = SortPermute.lane_entries(node.out.shape, axis, how)

        def dyn(vals: Sequence[Any], out: Any) -> np.ndarray:
            return SortPermute.lane_hits(vals[1], axis, how, li, lj)

        return [LocalJac(cols, rows, dyn=dyn), None]

    def jvp(
        self, node: Node, vals: Sequence[Any], tangents: Sequence[np.ndarray | None], out: Any
    ) -> np.ndarray | None:
        """The tangents of ``ct`` scattered as ``ct`` is: O(p n)."""
        t = tangents[0]
        if t is None:
            return None
        p = t.shape[0]
        how = node.params.get("how", "sort")
        src = SortPermute.sources(node.out.shape, node.params["axis"], how, vals[1])
        return self._scatter(t.reshape(p, -1), src, how).reshape((p, *node.out.shape))

    def vjp(
        self, node: Node, vals: Sequence[Any], out: Any, ct: np.ndarray
    ) -> list[np.ndarray | None]:
        """The cotangents gathered at the positions read: O(q n)."""
        if not node.inputs[0].active:
            return [None, None]
        q = ct.shape[0]
        src = SortPermute.sources(node.out.shape, node.params["axis"],
                                  node.params.get("how", "sort"), vals[1])
        return [np.take(ct.reshape(q, -1), src, axis=1).reshape((q, *node.out.shape)), None]


SORT_PERMUTE = SortPermute()
SORT_SCATTER = SortScatter()
ARGSORT = _ZeroReduction("argsort", np.argsort)
ARGPARTITION = _ZeroReduction("argpartition", np.argpartition)


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


def _kth(name: str, kth: Any, order: Any) -> int | tuple[int, ...]:
    """``kth`` of ``partition``/``argpartition`` as static ints (a traced one is refused)."""
    if order is not None or isinstance(kth, Tracer):
        raise UnsupportedPrimitiveError(name, "`order=` or a traced `kth`")
    return int(kth) if np.ndim(kth) == 0 else tuple(int(v) for v in np.ravel(kth))


@register_function(np.partition, family="sorting", via="sort_permute",
                   note="argpartition's order; local pattern exact")
def _partition(a: Any, kth: Any, axis: Any = -1, kind: Any = "introselect",
               order: Any = None) -> Any:
    k = _kth("numpy.partition", kth, order)
    a, ax = _axis(a, axis, "numpy.partition")
    return bind(SORT_PERMUTE, (a,), {"axis": ax, "how": ("partition", k)})


@register_function(np.argsort, family="sorting", via="argsort (zero derivative)",
                   note="indexing with it needs local detection")
def _argsort(a: Any, axis: Any = -1, kind: Any = None, order: Any = None, **kw: Any) -> Any:
    if order is not None:
        raise UnsupportedPrimitiveError("numpy.argsort", "the `order=` argument")
    return bind(ARGSORT, (a,), {"axis": axis, "kind": "stable"})


@register_function(np.argpartition, family="sorting", via="argpartition (zero derivative)",
                   note="indexing with it needs local detection")
def _argpartition(a: Any, kth: Any, axis: Any = -1, kind: Any = "introselect",
                  order: Any = None) -> Any:
    k = _kth("numpy.argpartition", kth, order)
    return bind(ARGPARTITION, (a,), {"kth": k, "axis": axis, "kind": kind})


#: Quantile methods with a constant interpolation between two sorted neighbours.
QUANTILE_METHODS = ("linear", "lower", "higher", "nearest", "midpoint")


def _quantile_sorted(s: Any, q: np.ndarray, ax: int, keepdims: bool,
                     method: str = "linear") -> Any:
    """Numpy's quantile ``method`` (:data:`QUANTILE_METHODS`) on a lane sorted along ``ax``."""
    n = _shape(s)[ax]
    virtual = q * (n - 1)
    lo = np.clip(np.floor(virtual).astype(np.int64), 0, n - 1)
    hi = np.clip(lo + 1, 0, n - 1)
    frac = virtual - lo
    if method == "lower":
        hi, frac = lo, np.zeros_like(frac)
    elif method == "higher":
        lo = np.clip(np.ceil(virtual).astype(np.int64), 0, n - 1)
        hi, frac = lo, np.zeros_like(frac)
    elif method == "nearest":  # numpy rounds half to even
        lo = np.clip(np.around(virtual).astype(np.int64), 0, n - 1)
        hi, frac = lo, np.zeros_like(frac)
    elif method == "midpoint":  # halfway between the neighbours, unless on one
        frac = np.where(frac == 0, 0.0, 0.5)
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


def _constant(q: Any, name: str = "") -> Any:
    """``q`` made in ``f`` as a constant buffer (``np.array([25.0, 75.0])``): its value.

    A single-precision ``q`` is refused by name: numpy interpolates in ``q``'s precision, and
    the rule in double precision would differ from ``f``'s own value (found from outside:
    the trace's value check refused it, blaming ``f``).
    """
    q = q._var.value if isinstance(q, Tracer) and q._var.is_const else q
    if (isinstance(q, np.ndarray | np.generic) and q.dtype.kind == "f"
            and q.dtype.itemsize < 8):
        raise UnsupportedPrimitiveError(
            name, f"a {q.dtype} `q` (numpy interpolates in q's precision; pass it as float64, "
            "np.float64(q) or q.astype(float))")
    return q


def _quantile(name: str, a: Any, q: Any, axis: Any, method: str, keepdims: bool,
              extra: dict[str, Any]) -> Any:
    q = _constant(q, name)
    if isinstance(q, Tracer) or method not in QUANTILE_METHODS or \
            extra.get("out") is not None or extra.get("overwrite_input") or \
            extra.get("weights") is not None:
        raise UnsupportedPrimitiveError(
            name, f"this form (allowed: constant `q`, method in {QUANTILE_METHODS}; got "
            f"method={method!r})")
    if axis is not None and not isinstance(axis, (int, np.integer)):
        raise UnsupportedPrimitiveError(name, f"`axis`={axis!r} (allowed: None or an int)")
    nd = len(_shape(a))
    if axis is None:
        s = np.sort(np.ravel(a))
        res = _quantile_sorted(s, np.asarray(q, dtype=np.float64), 0, False, method)
        if keepdims:
            res = np.reshape(res, np.shape(res) + (1,) * nd)
        return res
    ax = int(axis) % nd
    return _quantile_sorted(np.sort(a, axis=ax), np.asarray(q, dtype=np.float64), ax,
                            keepdims, method)


@register_function(np.quantile, family="sorting", via="sort_permute + lerp",
                   note="constant q; method linear, lower, higher, nearest or midpoint")
def _np_quantile(a: Any, q: Any, axis: Any = None, out: Any = None,
                 overwrite_input: bool = False, method: str = "linear",
                 keepdims: bool = False, **kw: Any) -> Any:
    return _quantile("numpy.quantile", a, q, axis, method, keepdims,
                     {"out": out, "overwrite_input": overwrite_input, **kw})


@register_function(np.percentile, family="sorting", via="sort_permute + lerp",
                   note="constant q; method linear, lower, higher, nearest or midpoint")
def _np_percentile(a: Any, q: Any, axis: Any = None, out: Any = None,
                   overwrite_input: bool = False, method: str = "linear",
                   keepdims: bool = False, **kw: Any) -> Any:
    q = _constant(q, "numpy.percentile")
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
        raise UnsupportedPrimitiveError("numpy.median",
                                        f"`axis`={axis!r} (allowed: None or an int)")
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


def _running_extremum(name: str) -> Any:
    def handler(a: Any, axis: int = 0, dtype: Any = None, out: Any = None) -> Any:
        if dtype is not None or out is not None:
            raise UnsupportedPrimitiveError(f"numpy.{name}", "the `dtype=`/`out=` arguments")
        a, ax = _axis(a, axis, f"numpy.{name}")
        return bind(SORT_PERMUTE, (a,), {"axis": ax, "how": name})

    return handler


register_ufunc(np.maximum, "accumulate", _running_extremum("maximum.accumulate"),
               family="sorting", via="sort_permute (running extremum)")
register_ufunc(np.minimum, "accumulate", _running_extremum("minimum.accumulate"),
               family="sorting", via="sort_permute (running extremum)")


_TAKE_ALONG = FUNCTIONS[np.take_along_axis].handler  # the movement entry (constant indices)


def _argsort_of(indices: Any, arr: Any, axis: Any) -> int | None:
    """The axis when ``indices`` is ``np.argsort(arr, axis)`` recorded in this trace."""
    if not (isinstance(indices, Tracer) and isinstance(arr, Tracer)) or axis is None:
        return None
    nd = len(_shape(arr))
    for node in reversed(arr._trace.nodes):
        if node.out is indices._var:
            if node.prim is not ARGSORT or node.inputs[0] is not arr._var:
                return None
            a = node.params.get("axis", -1)
            if a is None or int(a) % nd != int(axis) % nd:
                return None
            return int(axis) % nd
    return None


@register_function(np.take_along_axis, family="movement", via="gather | sort_permute",
                   note="constant indices, or `np.argsort` of the same array (a sort)")
def _take_along_axis(arr: Any, indices: Any, axis: Any = -1) -> Any:
    ax = _argsort_of(indices, arr, axis)
    if ax is not None:  # x sorted by its own argsort: the sort, valid in global mode
        return bind(SORT_PERMUTE, (arr,), {"axis": ax})
    return _TAKE_ALONG(arr, indices, axis)
