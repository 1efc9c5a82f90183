"""Operands of traced operations: numpy's deferral rule, and object arrays of Tracers.

Kept apart from :mod:`sparsejac.tracing.tracer` (which re-exports :func:`lift_objects`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["defers", "holds_tracer", "lift_objects"]


def holds_tracer(a: Any, depth: int = 4) -> bool:
    """A Tracer, or a list or tuple (``depth`` levels) or object array holding one.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsejac.tracing.operands import holds_tracer
    >>> holds_tracer([[1.0, 2.0]]), holds_tracer(np.ones(2))
    (False, False)
    """
    from sparsejac.tracing.tracer import Tracer

    if isinstance(a, Tracer):
        return True
    if isinstance(a, (list, tuple)) and depth > 0:
        return any(holds_tracer(b, depth - 1) for b in a)
    if isinstance(a, np.ndarray) and a.dtype == object:  # np.array([...]) of traced scalars
        return any(isinstance(b, Tracer) for b in a.flat)
    return False


def defers(o: Any) -> bool:
    """Whether ``tracer <op> o`` is ``o``'s to answer, as numpy's binary operators decide.

    An operand with ``__array_ufunc__ = None``, or without ``__array_ufunc__`` and with a
    higher ``__array_priority__`` than an ndarray's (a ``scipy.sparse`` matrix: ``u * L`` is
    ``L.__rmul__(u)``, the product ``u @ L`` for a ``csr_matrix``).
    """
    if isinstance(o, (np.ndarray, int, float, complex, np.generic, list, tuple)):
        return False  # (a Tracer has its own __array_ufunc__: no deferring either)
    ufunc = getattr(type(o), "__array_ufunc__", _NOT_SET)
    if ufunc is None:
        return True
    if ufunc is not _NOT_SET:
        return False
    priority = getattr(o, "__array_priority__", 0.0)
    return isinstance(priority, (int, float)) and priority > 0.0


_NOT_SET = object()


def lift_objects(obj: Any) -> Any:
    """A traced array for an object-dtype ndarray that holds Tracers; anything else as is.

    ``np.array([a, b])`` of traced scalars is such an array (see ``Tracer.__array__``).
    Lists and tuples are lifted element by element, one level deep, as numpy's functions
    take sequences of arrays.

    Examples
    --------
    >>> import numpy as np
    >>> import sparsejac
    >>> def f(x):
    ...     return np.array([x[0] * x[1], np.sin(x[2])])  # a list of traced scalars
    >>> sparsejac.jacobian(f, np.array([2.0, 3.0, 0.0])).toarray()
    array([[3., 2., 0.],
           [0., 0., 1.]])
    """
    if isinstance(obj, np.ndarray) and obj.dtype == object:
        from sparsejac.tracing.hooks import registry
        from sparsejac.tracing.tracer import Tracer

        if not any(isinstance(v, Tracer) for v in obj.flat):
            return obj
        if obj.ndim == 0:
            return obj.item()
        return registry().as_array(obj.tolist())
    if isinstance(obj, (list, tuple)) and any(
        isinstance(v, np.ndarray) and v.dtype == object for v in obj
    ):
        return type(obj)(lift_objects(v) for v in obj)
    return obj
