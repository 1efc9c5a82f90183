"""Buffers made inside ``f`` by ``np.zeros(n)`` and friends become traceable.

The most common way to write a right-hand side fills a buffer::

    out = np.zeros(n)
    out[1:-1] = (u[2:] - 2 * u[1:-1] + u[:-2]) / h**2
    np.add.at(out, idx, flux)

``np.zeros(n)`` has no traced argument, so numpy never asks the tracer, and a plain array
cannot hold traced values. While a trace runs, the creation functions of :data:`CREATORS`
(``numpy.zeros``, ``ones``, ``empty``, ``full`` and their ``_like`` forms given a plain
prototype) are replaced by wrappers that, **when called from the traced function's own code
in the tracing thread**, return a *constant* traced array with the same value, shape and
dtype: it can then receive traced values (slices, masks, fancy indices, ``+=``, ``np.add.at``,
``np.put``), be read back, reshaped and returned. Everywhere else (another thread, numpy,
scipy or sparsejac calling them) the wrappers call the original function unchanged. The
wrappers are installed when the first trace of the process starts and removed when the last
one ends, under a lock, so outside a trace numpy is numpy.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from sparsejac import kernels
from sparsejac.tracing.program import current_trace

__all__ = ["CREATORS", "buffers_traced"]

#: numpy creation functions whose result, made by the traced function, becomes traceable.
CREATORS: tuple[str, ...] = ("zeros", "ones", "empty", "full", "zeros_like", "ones_like",
                             "empty_like", "full_like")

_LOCK = threading.Lock()
_ACTIVE = [0]  # traces running in this process
_ORIGINALS: dict[str, Callable[..., Any]] = {}
_LIBRARIES = ("numpy", "scipy", "sparsejac", "numba")


def _from_user_code() -> bool:
    """Whether the creation call comes from the traced function's code (not a library's)."""
    frame = sys._getframe(2)
    module = str(frame.f_globals.get("__name__", ""))
    if module.partition(".")[0] in _LIBRARIES:
        return False
    path = frame.f_code.co_filename
    return not any(p in path for p in ("site-packages", "dist-packages"))


def _wrapper(name: str, original: Callable[..., Any]) -> Callable[..., Any]:
    def create(*args: Any, **kwargs: Any) -> Any:
        value = original(*args, **kwargs)
        trace = current_trace()
        if (trace is None or trace.closed or not isinstance(value, np.ndarray)
                or value.dtype.kind not in "biuf" or not _from_user_code()):
            return value
        from sparsejac.tracing.tracer import Tracer

        return Tracer(trace, trace.const(value))

    create.__name__ = create.__qualname__ = name
    create.__doc__ = original.__doc__
    create.__wrapped__ = original  # type: ignore[attr-defined]
    create.sparsejac_buffer_wrapper = True  # type: ignore[attr-defined]
    return create


@contextmanager
def buffers_traced() -> Iterator[None]:
    """Install the creation wrappers for the duration of a trace (reference-counted)."""
    with _LOCK:
        if _ACTIVE[0] == 0:
            for name in CREATORS:
                original = getattr(np, name)
                _ORIGINALS[name] = original
                setattr(np, name, _wrapper(name, original))
        _ACTIVE[0] += 1
    try:
        yield
    finally:
        with _LOCK:
            _ACTIVE[0] -= 1
            if _ACTIVE[0] == 0:
                for name, original in _ORIGINALS.items():
                    setattr(np, name, original)
                _ORIGINALS.clear()


@contextmanager
def _numpy_restored() -> Iterator[None]:
    """Put numpy's own creation functions back for a moment, wrappers or not (numba's start)."""
    with _LOCK:
        wrappers = {name: getattr(np, name) for name in _ORIGINALS}
        for name, original in _ORIGINALS.items():
            setattr(np, name, original)
        try:
            yield
        finally:
            for name, wrapper in wrappers.items():
                setattr(np, name, wrapper)


kernels.guard_numba_start(_numpy_restored)
