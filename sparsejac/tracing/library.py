"""Library functions that convert their inputs, traced while a trace runs.

``scipy.linalg.solve``, ``scipy.special.logsumexp`` or ``scipy.stats.norm.logpdf`` are plain
Python functions that call ``np.asarray`` on their arguments, so numpy never hands them to the
tracer (``__array_function__`` covers numpy's own functions only) and a Tracer reaching
``np.asarray`` can only be refused: ``__array__`` must return a real ndarray.

Each such function whose traced version the registry provides is *intercepted* while a trace
runs: its code object (``func.__code__``) is swapped for a small trampoline with the same
closure layout, which

* hands the call to the registry (``registry().function(func, args, kwargs)``, the same path
  as a numpy function's ``__array_function__``) when a trace is being recorded **in the calling
  thread** and a Tracer is among the arguments (one level into lists and tuples), or, for the
  few entries marked ``always`` (``scipy.sparse.linalg.splu``: a factorisation of a constant
  matrix whose ``solve`` will receive Tracers), when it is called from the traced function's
  own code;
* otherwise calls the original code, unchanged (another thread, numpy or scipy calling it, a
  call without Tracers).

Swapping the code object, rather than a module attribute, reaches every reference to the
function: ``from scipy.linalg import solve`` done before the trace, the method of a
distribution instance, an alias in a closure. The trampolines are installed when the first
trace of the process starts and the original code objects restored when the last one ends,
under a lock and reference-counted (as :mod:`sparsejac.tracing.buffers`), so outside a trace
every function runs its own code. Assigning ``__code__`` is atomic, and a call already running
keeps the code object it started with. While a trace runs, ``inspect.signature`` of an
intercepted function shows the trampoline's ``(*args, **kwargs)``.
"""

from __future__ import annotations

import sys
import threading
import types
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np

from sparsejac.kernels import ForkSafeLock
from sparsejac.tracing.callers import user_frame
from sparsejac.tracing.hooks import registry
from sparsejac.tracing.operands import holds_tracer
from sparsejac.tracing.program import current_trace

__all__ = ["defer", "forget", "intercept", "intercepted", "library_traced", "own_code",
           "pending_imported", "run_deferred"]

_LOCK = ForkSafeLock()
_ACTIVE = [0]  # traces running in this process


@dataclass
class _Hook:
    func: types.FunctionType
    code: types.CodeType  # the function's own code
    trampoline: types.CodeType
    original: types.FunctionType  # a copy of the function running its own code
    always: bool
    active: bool = True  # False once forgotten (its key stays, so keys never move)
    key: Any = None  # what the registry knows it by (a numpy dispatcher), if not func
    lift: bool = True  # lists of traced values and object arrays become traced arrays


_HOOKS: list[_Hook] = []
_BY_ID: dict[int, int] = {}


def _trampoline(func: types.FunctionType, key: int) -> types.CodeType:
    """Code for ``func`` that calls :func:`_enter` with ``key`` (same free variables)."""
    freevars = func.__code__.co_freevars
    params = ", ".join(freevars)
    # reference the free variables (in a branch never taken) so that the trampoline's code has
    # exactly the closure layout of func's: __code__ assignment requires it
    touch = (f"        if _sparsejac_args is None:\n            ({params},)\n"
             if freevars else "")
    name = func.__code__.co_name
    src = (
        f"def _factory({params}):\n"
        f"    def {name}(*_sparsejac_args, **_sparsejac_kwargs):\n"
        f"{touch}"
        "        from sparsejac.tracing.library import _enter\n"
        f"        return _enter({key}, _sparsejac_args, _sparsejac_kwargs)\n"
        f"    return {name}\n"
    )
    namespace: dict[str, Any] = {}
    filename = f"<sparsejac: traced {func.__module__}.{func.__qualname__}>"
    exec(compile(src, filename, "exec"), namespace)
    inner = namespace["_factory"](*([None] * len(freevars)))
    code: types.CodeType = inner.__code__
    return code.replace(co_qualname=func.__code__.co_qualname)


def intercept(func: Callable[..., Any], *, always: bool = False, lift: bool = True) -> None:
    """Trace ``func`` (a pure-Python library function) through the registry while tracing.

    Parameters
    ----------
    func : function
        The library function; the registry must hold an entry for it
        (``sparsejac.primitives.core.register_library`` registers both).
    always : bool
        Hand it to the registry also without Tracer arguments, when the traced function's own
        code calls it (a factorisation of a constant matrix, whose result will meet Tracers).
    lift : bool
        Hand a list of traced values (``[u[0], u[1]]``, nested too) or ``np.array([...])``
        of traced scalars (an object array) to the registry as one traced array, as the
        function's own ``np.asarray`` would make it (False for a function that takes a tuple
        of separate arrays, such as ``np.r_[a, b]``).

    Examples
    --------
    >>> import scipy.special
    >>> from sparsejac.tracing.library import intercepted
    >>> scipy.special.logsumexp in intercepted()   # registered by sparsejac.primitives
    True
    """
    dispatcher = None
    if not isinstance(func, types.FunctionType) and isinstance(
            getattr(func, "_implementation", None), types.FunctionType):
        # a numpy function (np.linalg.det): __array_function__ serves Tracers, its Python
        # implementation is reached by lists of them and np.array([...]) of traced scalars
        dispatcher, func = func, getattr(func, "_implementation")  # noqa: B009
    if not isinstance(func, types.FunctionType):
        raise TypeError(
            f"only pure-Python functions can be intercepted; got {type(func).__name__}")
    if id(func) in _BY_ID:
        _HOOKS[_BY_ID[id(func)]].always = always
        _HOOKS[_BY_ID[id(func)]].lift = lift
        return
    key = len(_HOOKS)
    code = func.__code__
    original = types.FunctionType(code, func.__globals__, func.__name__, func.__defaults__,
                                  func.__closure__)
    original.__kwdefaults__ = func.__kwdefaults__
    original.__qualname__ = func.__qualname__
    with _LOCK:
        _HOOKS.append(_Hook(func, code, _trampoline(func, key), original, always,
                            key=dispatcher, lift=lift))
        _BY_ID[id(func)] = key
        if _ACTIVE[0]:  # registered while traces run: install now
            func.__code__ = _HOOKS[key].trampoline


def forget(func: Callable[..., Any]) -> None:
    """Stop intercepting ``func`` (its own code is restored if a trace is running).

    Examples
    --------
    >>> from sparsejac.tracing.library import forget, intercept, intercepted
    >>> def double(a):
    ...     return 2 * a
    >>> intercept(double)
    >>> forget(double)
    >>> double in intercepted()
    False
    """
    with _LOCK:
        key = _BY_ID.pop(id(func), None)
        if key is None:
            return
        hook = _HOOKS[key]
        hook.func.__code__ = hook.code
        hook.active = False


def own_code(func: Callable[..., Any]) -> Callable[..., Any]:
    """A copy of intercepted ``func`` that runs its own code even while a trace runs.

    Examples
    --------
    >>> import scipy.linalg
    >>> from sparsejac.tracing.library import own_code
    >>> own_code(scipy.linalg.solve).__name__
    'solve'
    """
    return _HOOKS[_BY_ID[id(func)]].original


def intercepted() -> list[Callable[..., Any]]:
    """The library functions traced through the registry (see :func:`intercept`).

    Examples
    --------
    >>> import scipy.linalg
    >>> from sparsejac.tracing.library import intercepted
    >>> scipy.linalg.solve in intercepted()
    True
    """
    return [h.func for h in _HOOKS if h.active]


_DEFERRED: dict[str, list[Callable[[], Any]]] = {}
_DEFER_LOCK = threading.Lock()


def defer(module: str, register: Callable[[], Any]) -> None:
    """Run ``register`` once ``module`` is imported (checked when a trace starts).

    Rules for a heavy library (``scipy.stats`` takes a third of a second to import) are
    registered only when the user's program has imported it: a traced function that calls
    ``scipy.stats.norm.logpdf`` has imported ``scipy.stats`` before its trace starts.

    Examples
    --------
    >>> from sparsejac.tracing.library import defer, run_deferred
    >>> seen = []
    >>> defer("json", lambda: seen.append("registered"))
    >>> import json
    >>> run_deferred()
    >>> seen
    ['registered']
    """
    if module in sys.modules:
        register()
        return
    with _DEFER_LOCK:
        _DEFERRED.setdefault(module, []).append(register)


def pending_imported() -> bool:
    """Whether a deferred registration waits for a module that is imported by now."""
    with _DEFER_LOCK:
        return any(m in sys.modules for m in _DEFERRED)


def run_deferred(force: bool = False) -> None:
    """Run the deferred registrations whose module is imported (all of them with ``force``)."""
    with _DEFER_LOCK:
        ready = [m for m in _DEFERRED if force or m in sys.modules]
        todo = [f for m in ready for f in _DEFERRED.pop(m)]
    for register in todo:
        register()


def _has_tracer(args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    return any(holds_tracer(a, 3) for a in (*args, *kwargs.values()))


def _lifted(a: Any) -> Any:
    """A list of traced values or an object array holding Tracers as one traced array.

    What numpy's ``asarray`` would make of it, had it values (a ragged list stays as it is).
    """
    if not holds_tracer(a, 3) or not isinstance(a, (list, tuple, np.ndarray)):
        return a
    try:
        return registry().as_array(a.tolist() if isinstance(a, np.ndarray) else a)
    except (ValueError, TypeError):
        return a


def _from_user_code() -> bool:
    """Whether the trampoline was called from the traced function's code (not a library's)."""
    return user_frame(sys._getframe(3))  # _from_user_code <- _enter <- trampoline <- caller


def _enter(key: int, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """What an intercepted function does: the registry's handler, or its own code."""
    hook = _HOOKS[key]
    trace = current_trace()
    if trace is not None and not trace.closed and (
            _has_tracer(args, kwargs) or (hook.always and _from_user_code())):
        if hook.lift:
            args = tuple(_lifted(a) for a in args)
            kwargs = {k: _lifted(v) for k, v in kwargs.items()}
        return registry().function(hook.func if hook.key is None else hook.key, args, kwargs)
    return hook.original(*args, **kwargs)


@contextmanager
def library_traced() -> Iterator[None]:
    """Install the trampolines for the duration of a trace (reference-counted)."""
    if _DEFERRED:
        run_deferred()
    with _LOCK:
        if _ACTIVE[0] == 0:
            for hook in _HOOKS:
                if hook.active:
                    hook.func.__code__ = hook.trampoline
        _ACTIVE[0] += 1
    try:
        yield
    finally:
        with _LOCK:
            _ACTIVE[0] -= 1
            if _ACTIVE[0] == 0:
                for hook in _HOOKS:
                    if hook.active:
                        hook.func.__code__ = hook.code
