"""The hook through which the Tracer reaches the primitive registry.

The tracing layer records numpy calls but knows no numpy function: every call that reaches a
:class:`~sparsejac.tracing.tracer.Tracer` (a ufunc, a numpy function, ``x[key]``,
``x[key] = v``, ``.astype``, a list of traced values becoming an array, a write through a
view) is handed to the :class:`Registry` installed here. :mod:`sparsejac.primitives` installs
its registry when it is imported; ``import sparsejac`` sets a :func:`loader` that imports it
on the first traced call, so this layer imports nothing from the layers above it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["Registry", "install", "loader", "registry"]


@dataclass(frozen=True)
class Registry:
    """What the Tracer asks of the primitive registry, one callable per kind of call.

    Attributes
    ----------
    function : callable
        ``(func, args, kwargs) -> result`` for a numpy function (``__array_function__``).
    ufunc : callable
        ``(ufunc, method, inputs, kwargs) -> result`` for a ufunc or one of its methods.
    getitem, setitem : callable
        ``(tracer, key) -> result`` and ``(tracer, key, value) -> new value`` for indexing.
    astype : callable
        ``(tracer, dtype) -> result``.
    as_array : callable
        ``(sequence) -> traced array`` for nested lists holding traced values.
    check_writeable, sync : callable
        ``(tracer) -> None``: refuse a write into a read-only view; propagate an in-place
        update to the arrays the tracer is a view of, and to its views.
    element : callable
        ``(trace, var, flat) -> tracer``: element ``flat`` (C order) of ``var``, 0-d.
    merge_writes : callable
        ``(trace, var, writes) -> var``: ``var`` after the element writes ``{flat: value}``
        (a :class:`~sparsejac.tracing.program.Var` or a number each), as one operation.
    read_writes : callable
        ``(trace, var, writes, positions) -> tracer``: the elements at ``positions`` of
        ``var`` with the pending element writes, which stay pending.
    """

    function: Callable[[Any, tuple[Any, ...], dict[str, Any]], Any]
    ufunc: Callable[[Any, str, tuple[Any, ...], dict[str, Any]], Any]
    getitem: Callable[[Any, Any], Any]
    setitem: Callable[[Any, Any, Any], Any]
    astype: Callable[[Any, Any], Any]
    as_array: Callable[[Any], Any]
    check_writeable: Callable[[Any], None]
    sync: Callable[[Any], None]
    element: Callable[[Any, Any, int], Any]
    merge_writes: Callable[[Any, Any, dict[int, Any]], Any]
    read_writes: Callable[[Any, Any, dict[int, Any], Any], Any]


_INSTALLED: list[Registry] = []
_LOADER: list[Callable[[], None]] = []


def loader(load: Callable[[], None]) -> None:
    """Set what :func:`registry` calls, once, when no registry is installed yet.

    Examples
    --------
    >>> import sparsejac  # sets a loader that imports sparsejac.primitives when first needed
    >>> from sparsejac.tracing import hooks
    >>> type(hooks.registry()).__name__
    'Registry'
    """
    _LOADER[:] = [load]


def install(reg: Registry) -> None:
    """Make ``reg`` the registry every Tracer dispatches to (replacing any earlier one).

    Examples
    --------
    >>> import sparsejac  # installs the primitive registry
    >>> from sparsejac.tracing import hooks
    >>> hooks.registry() is hooks.registry()
    True
    """
    _INSTALLED[:] = [reg]


def registry() -> Registry:
    """The installed registry, or a clear error when none is.

    Raises
    ------
    RuntimeError
        Nothing installed a registry (``import sparsejac`` does).
    """
    if not _INSTALLED and _LOADER:
        _LOADER[0]()
    if not _INSTALLED:
        raise RuntimeError(
            "no primitive registry is installed, so a traced array cannot dispatch numpy "
            "calls; `import sparsejac` (or sparsejac.primitives) before tracing"
        )
    return _INSTALLED[0]
