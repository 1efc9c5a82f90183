"""Results assembled from pieces: ``np.r_``/``np.c_``, ``np.apply_along_axis``, ``np.vectorize``.

All three are composites of supported calls (indexing, ``concatenate``, ``stack``): no new
primitive. ``np.r_[...]``/``np.c_[...]`` are ``AxisConcatenator.__getitem__``, a pure-Python
method that converts its items with ``np.array``; it is intercepted while tracing
(:mod:`sparsejac.tracing.library`) and rebuilt here with the same promotion rules
(``ndmin``, ``trans1d``). ``apply_along_axis`` and ``vectorize`` call the user's function on
every lane (every element) of the traced operand, as numpy does, so whatever that function
does is traced exactly; their trace costs one call per lane (element).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sparsejac.errors import UnsupportedPrimitiveError
from sparsejac.primitives.core import register_function, register_library
from sparsejac.tracing.tracer import Tracer

try:  # numpy >= 2
    from numpy.lib._index_tricks_impl import AxisConcatenator
except ImportError:  # pragma: no cover
    from numpy.lib.index_tricks import AxisConcatenator  # type: ignore[no-redef]

__all__: list[str] = []


def _shape(a: Any) -> tuple[int, ...]:
    return tuple(np.shape(a._var.value if isinstance(a, Tracer) else a))


def _promote(item: Any, ndmin: int, trans1d: int) -> Any:
    """``np.array(item, ndmin=ndmin)`` with ``AxisConcatenator``'s ``trans1d`` transpose."""
    shape = _shape(item)
    d = len(shape)
    if d >= ndmin:
        return item
    arr = np.reshape(item, (1,) * (ndmin - d) + shape)
    if trans1d != -1 and d > 0:
        k2 = ndmin - d
        k1 = trans1d if trans1d >= 0 else trans1d + k2 + 1
        axes = list(range(ndmin))
        arr = np.transpose(arr, axes[:k1] + axes[k2:] + axes[k1:k2])
    return arr


@register_library(AxisConcatenator.__getitem__, name="numpy.r_ / numpy.c_", family="movement",
                  via="composite: reshape, concatenate",
                  note="no string directives, no matrix output", lift=False)
def _axis_concatenate(self: Any, key: Any) -> Any:
    items = key if isinstance(key, tuple) else (key,)
    if self.matrix or any(isinstance(k, str) for k in items):
        raise UnsupportedPrimitiveError(
            f"numpy.{type(self).__name__.lower()[0]}_",
            "string directives ('r', 'c', '0,2,1') and matrix output")
    pieces = []
    for item in items:
        if isinstance(item, slice):
            pieces.append(_promote(np.r_[item], self.ndmin, self.trans1d))
        elif not isinstance(item, Tracer) and np.ndim(item) == 0:
            pieces.append(np.array(item, ndmin=self.ndmin))
        else:
            pieces.append(_promote(item, self.ndmin, self.trans1d))
    return np.concatenate(pieces, axis=self.axis)


@register_function(np.apply_along_axis, family="movement",
                   via="composite: indexing, stack", note="one traced call per lane")
def _apply_along_axis(func1d: Any, axis: Any, arr: Any, *args: Any, **kwargs: Any) -> Any:
    shape = _shape(arr)
    nd = len(shape)
    if not isinstance(axis, (int, np.integer)) or not -nd <= int(axis) < nd:
        raise UnsupportedPrimitiveError("numpy.apply_along_axis",
                                        f"`axis`={axis!r} (allowed: an int < {nd})")
    ax = int(axis) % nd
    moved = np.moveaxis(arr, ax, -1)
    outer = shape[:ax] + shape[ax + 1:]
    results = [func1d(moved[idx], *args, **kwargs) for idx in np.ndindex(*outer)]
    buf = np.stack(results)
    res_nd = len(_shape(buf)) - 1
    buf = np.reshape(buf, outer + _shape(buf)[1:])
    n_outer = len(outer)
    return np.moveaxis(buf, list(range(n_outer, n_outer + res_nd)),
                       list(range(ax, ax + res_nd)))


@register_library(np.vectorize.__call__, name="numpy.vectorize", family="elementwise",
                  via="composite: indexing, stack",
                  note="one traced call per element; no signature/excluded")
def _vectorize_call(self: Any, *args: Any, **kwargs: Any) -> Any:
    if self.signature is not None or self.excluded or kwargs:
        raise UnsupportedPrimitiveError(
            "numpy.vectorize", "`signature=`, `excluded=` and keyword arguments")
    shape = np.broadcast_shapes(*(_shape(a) for a in args))
    args = tuple(np.broadcast_to(a, shape) if _shape(a) != shape else a for a in args)
    results = [self.pyfunc(*(a[idx] for a in args)) for idx in np.ndindex(*shape)]
    if any(isinstance(r, tuple) for r in results):
        raise UnsupportedPrimitiveError("numpy.vectorize", "functions with several outputs")
    return np.reshape(np.stack([r if isinstance(r, Tracer) else np.asarray(r, dtype=float)
                                for r in results]), shape)
