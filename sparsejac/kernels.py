"""Compiled kernels, loaded when first called: :func:`kernel`.

Every numba kernel of sparsejac is declared with ``@kernel(...)`` instead of
``@numba.njit(cache=True, ...)``. Declaring one imports nothing; its first call imports
numba, wraps every kernel of its module (and the kernels that module imported from others)
in ``numba.njit(cache=True, ...)`` and puts the compiled dispatchers in the modules'
namespaces, so kernels calling kernels compile as before. A process that never calls a
kernel never imports numba: the first Jacobian of a small function, whose detection and
colouring have numpy paths for small inputs (:func:`loaded` tells them whether numba is
already paying its way), starts about twice as fast.
"""

from __future__ import annotations

import importlib
import sys
import threading
from collections.abc import Callable
from typing import Any, TypeVar, cast

__all__ = ["FALLBACK_BUDGET", "kernel", "loaded", "typed_kernel", "use_fallback"]

_F = TypeVar("_F", bound=Callable[..., Any])

_LOCK = threading.RLock()


#: Entries the numpy paths may process in a process before the kernels take over: enough for
#: the first Jacobians of small functions (numba's import and runtime cost a few tenths of a
#: second), little enough that a process computing many Jacobians soon uses the kernels.
FALLBACK_BUDGET = 100_000
_BUDGET = [FALLBACK_BUDGET]


def use_fallback(size: int) -> bool:
    """Whether an input of ``size`` entries should take a numpy path instead of a kernel.

    True while numba is not loaded and this process's numpy paths have processed fewer than
    :data:`FALLBACK_BUDGET` entries (the results are the same either way).

    Examples
    --------
    >>> from sparsejac.kernels import use_fallback
    >>> use_fallback(10 ** 9)          # too large: always the kernel
    False
    """
    if "numba" in sys.modules or size > _BUDGET[0]:
        return False
    _BUDGET[0] -= size
    return True


def loaded() -> bool:
    """Whether numba is imported in this process (its runtime then costs nothing more).

    Examples
    --------
    >>> from sparsejac.kernels import loaded
    >>> isinstance(loaded(), bool)
    True
    """
    return "numba" in sys.modules


class LazyKernel:
    """A function compiled with ``numba.njit`` on its first call (see the module docstring)."""

    def __init__(self, fn: Callable[..., Any], options: dict[str, Any]) -> None:
        self.fn = fn
        self.options = {"cache": True, **options}
        self._compiled: Any = None
        self.__name__ = fn.__name__
        self.__qualname__ = fn.__qualname__
        self.__doc__ = fn.__doc__
        self.__wrapped__ = fn

    @property
    def compiled(self) -> Any:
        """The numba dispatcher (its module's kernels are bound on first access)."""
        if self._compiled is None:
            _bind(self.fn.__module__)
            if self._compiled is None:  # not a module-level name (defined in a function)
                import numba

                with _LOCK:
                    self._compiled = numba.njit(**self.options)(self.fn)
        return self._compiled

    def __call__(self, *args: Any) -> Any:
        compiled = self._compiled
        if compiled is None:
            compiled = self.compiled
        return compiled(*args)

    def __repr__(self) -> str:
        state = "compiled" if self._compiled is not None else "not loaded yet"
        return f"<kernel {self.fn.__module__}.{self.__qualname__} ({state})>"


def _bind(module_name: str) -> None:
    """Wrap every kernel of ``module_name`` with numba and publish the dispatchers."""
    with _LOCK:
        import numba

        module = importlib.import_module(module_name)
        names = vars(module)
        for name, value in list(names.items()):
            if not isinstance(value, LazyKernel):
                continue
            if value.fn.__module__ == module_name:
                if value._compiled is None:
                    value._compiled = numba.njit(**value.options)(value.fn)
            elif value._compiled is None:
                _bind(value.fn.__module__)  # a kernel imported from another module
            names[name] = value._compiled


def kernel(**options: Any) -> Callable[[Callable[..., Any]], Any]:
    """Decorator: ``numba.njit(cache=True, **options)``, applied on the first call.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsejac.kernels import kernel
    >>> @kernel(cache=False)
    ... def total(a):
    ...     s = 0.0
    ...     for v in a:
    ...         s += v
    ...     return s
    >>> total
    <kernel sparsejac.kernels.total (not loaded yet)>
    >>> float(total(np.arange(4.0)))
    6.0
    """

    def deco(fn: Callable[..., Any]) -> Any:  # Any, as numba's dispatchers are to mypy
        return LazyKernel(fn, options)

    return deco


def typed_kernel(**options: Any) -> Callable[[_F], _F]:
    """:func:`kernel` for an annotated function: type checkers see the function itself.

    Examples
    --------
    >>> from sparsejac.kernels import typed_kernel
    >>> @typed_kernel(cache=False)
    ... def half(a: float) -> float:
    ...     return a / 2.0
    >>> half(3.0)
    1.5
    """

    def deco(fn: _F) -> _F:
        return cast(_F, LazyKernel(fn, options))

    return deco
