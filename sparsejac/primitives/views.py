"""numpy's view semantics for traced arrays: writes through views reach their base.

Views also see later writes to their base. ODE right-hand sides are often written as
``dydt = np.empty_like(y); du, dv = dydt[:n], dydt[n:]; du[:] = ...; dv[:] = ...``; in
numpy ``du`` and ``dv`` are views, so the assignments fill ``dydt``. A Tracer is not a
buffer, so the aliasing is recorded instead: when a movement call (slicing, ``reshape``,
``np.split``, ``.T`` ...) returns what numpy returns as a *view* of its single array operand
(the result shares memory with it), :func:`link_view` remembers the base and, lazily, the flat
base position of every view element. After any in-place update of a Tracer
(``Tracer._rebind``), :func:`sync` writes the new value back into its bases up to the root
(one gather each: base elements, with the view's elements at the view's positions) and
re-reads every live view below the root. Read-only views (``np.broadcast_to``,
``np.diagonal``) refuse writes as numpy does.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Container
from typing import Any

import numpy as np

from sparsejac.primitives.movement import gather_from_positions
from sparsejac.tracing.tracer import Tracer

__all__ = ["is_view_of", "link_view", "sync"]


class _LazyIndex:
    """Flat base position of every view element, computed on first use and kept."""

    __slots__ = ("_fn", "_index")

    def __init__(self, fn: Callable[[], np.ndarray]) -> None:
        self._fn: Callable[[], np.ndarray] | None = fn
        self._index: np.ndarray | None = None

    def __call__(self) -> np.ndarray:
        if self._index is None:
            assert self._fn is not None
            self._index = np.ascontiguousarray(self._fn(), dtype=np.int64).ravel()
            self._fn = None
        return self._index


def is_view_of(value: Any, base_value: Any) -> bool:
    """Whether numpy returned ``value`` as a view of ``base_value`` (they share memory)."""
    return (isinstance(value, np.ndarray) and isinstance(base_value, np.ndarray)
            and value.size > 0 and np.may_share_memory(value, base_value))


def link_view(base: Tracer, view: Tracer, index: Callable[[], np.ndarray],
              writeable: bool) -> None:
    """Record that ``view`` aliases ``base``; ``index()`` gives its flat base positions."""
    view._base = (base, _LazyIndex(index), writeable)
    if base._views is None:
        base._views = []
    base._views.append(weakref.ref(view))


def check_writeable(t: Tracer) -> None:
    """Refuse an in-place update of a read-only view, as numpy does."""
    if t._base is not None and not t._base[2]:
        raise ValueError(
            "assignment destination is read-only (a view numpy marks read-only or deprecates "
            "writing to, such as a result of np.broadcast_arrays or np.broadcast_to, or a "
            "view of several traced arrays at once): write to a copy (`.copy()`) instead")


def sync(t: Tracer) -> None:
    """After ``t`` was updated in place: update its bases, then every view of the root."""
    root = t
    current = {id(t)}  # t and its bases hold their new values: not re-read
    while root._base is not None:
        base, index, _ = root._base
        base._var = _write_back(base, index(), root)._var
        root = base
        current.add(id(root))
    _refresh(root, current)


def _write_back(base: Tracer, index: np.ndarray, view: Tracer) -> Tracer:
    """Return ``base`` with the elements at ``index`` (flat) replaced by those of ``view``."""
    bvar, vvar = base._var, view._var
    value = np.array(bvar.value, copy=True, order="C")  # (a Fortran-ordered copy's reshape(-1)
    value.reshape(-1)[index] = np.asarray(vvar.value).reshape(-1)  # would be another copy)
    pos = np.zeros(bvar.size, dtype=np.int64)
    in_vars = []
    offset = 1
    if not bvar.is_const:
        pos[:] = np.arange(1, bvar.size + 1)
        in_vars.append(bvar)
        offset += bvar.size
    if vvar.is_const:
        pos[index] = 0
    else:
        pos[index] = offset + np.arange(vvar.size)
        in_vars.append(vvar)
    return gather_from_positions(base._trace, in_vars, pos.reshape(bvar.shape),  # type: ignore[no-any-return]
                                 value)


def _refresh(t: Tracer, current: Container[int] = ()) -> None:
    """Re-read every live view of ``t`` (and their views) from ``t``'s current value.

    The tracers in ``current`` (by id: the one written and its bases) already hold their new
    values: only their own views are re-read.
    """
    if not t._views:
        return
    alive = []
    for ref in t._views:
        v = ref()
        if v is None:
            continue
        alive.append(ref)
        if id(v) in current:
            _refresh(v, current)
            continue
        index = v._base[1]()
        var = t._var
        value = np.asarray(var.value).reshape(-1)[index].reshape(v.shape)
        if var.is_const:
            positions = np.zeros(v.shape, dtype=np.int64)
            v._var = gather_from_positions(t._trace, [], positions, value)._var
        else:
            v._var = gather_from_positions(t._trace, [var], index.reshape(v.shape) + 1,
                                           value)._var
        _refresh(v, current)
    t._views = alive
