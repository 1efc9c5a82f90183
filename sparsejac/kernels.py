"""Compiled kernels, loaded when first called: :func:`kernel`.

Every numba kernel of sparsejac is declared with ``@kernel(...)`` instead of
``@numba.njit(cache=True, ...)``. Declaring one imports nothing; its first call imports
numba, wraps every kernel of its module (and the kernels that module imported from others)
in ``numba.njit(cache=True, ...)`` and puts the compiled dispatchers in the modules'
namespaces, so kernels calling kernels compile as before. A process that never calls a
kernel never imports numba (0.2 s with its runtime): detection and colouring have numpy paths
for small inputs (:func:`loaded` tells them whether numba is already paying its way), and a
kernel with a numpy twin (:meth:`LazyKernel.numpy_twin`: the recording kernels of the chain
engine, recoverability, the two-block gather) computes the same outputs vectorised, and a
kernel declared ``interpret=True`` (one pass over its input: a greedy colouring, a replay of
the prepared program, the compiled tape's Jacobian) runs its own code in the interpreter on
small inputs (:attr:`LazyKernel.python`: the same operations in the same order, so the same
results bit for bit); a small tape's Jacobian also runs as straight-line Python generated
from it once its calls have paid for that (:mod:`sparsejac.ad.fused`). These draw on one
budget per process, :data:`FALLBACK_BUDGET`, about
numba's start in time: once it is spent the kernels load, so a process that keeps computing
pays at most about twice that start, and one that computes a few small Jacobians never
pays it.

A kernel with no up-to-date copy in numba's on-disk cache is compiled on its first call,
seconds after installing; the first such compilation in a process issues a
:class:`~sparsejac.errors.KernelCompilationWarning` (:func:`cache_missing` decides), and
:func:`sparsejac.warm_up` compiles the common ones ahead.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import sys
import threading
import types
import warnings
import weakref
from collections.abc import Callable
from typing import Any, TypeVar, cast

import numpy as np

__all__ = ["FALLBACK_BUDGET", "ForkSafeLock", "cache_missing", "expect", "kernel", "loaded",
           "typed_kernel", "use_fallback"]

_F = TypeVar("_F", bound=Callable[..., Any])

class ForkSafeLock:
    """A lock (re-entrant if asked) that a forked child gets anew.

    One held by another thread of the parent at the fork would never be released in the
    child, which would wait for it forever (a ``multiprocessing`` pool started with the
    ``fork`` method while another thread binds the kernels).

    Examples
    --------
    >>> from sparsejac.kernels import ForkSafeLock
    >>> lock = ForkSafeLock(reentrant=True)
    >>> with lock:
    ...     with lock:
    ...         pass
    """

    __slots__ = ("__weakref__", "_lock", "_reentrant")

    def __init__(self, reentrant: bool = False) -> None:
        self._reentrant = reentrant
        self._lock: Any = threading.RLock() if reentrant else threading.Lock()
        _FORK_SAFE.add(self)

    def renew(self) -> None:
        """A new, released lock (in a forked child)."""
        self._lock = threading.RLock() if self._reentrant else threading.Lock()

    def __enter__(self) -> bool:
        return bool(self._lock.acquire())

    def __exit__(self, *exc: object) -> None:
        self._lock.release()


_FORK_SAFE: weakref.WeakSet[ForkSafeLock] = weakref.WeakSet()


def _renew_after_fork() -> None:
    for lock in list(_FORK_SAFE):
        lock.renew()


os.register_at_fork(after_in_child=_renew_after_fork)

_LOCK = ForkSafeLock(reentrant=True)


#: Work the numpy paths and interpreted kernels may do in a process before the kernels take
#: over, in units of about 10 ns of what they cost more than the compiled kernels (detection's
#: numpy paths draw one per entry; a numpy twin :data:`TWIN_CALL_UNITS` a call plus its
#: measured excess per entry, :meth:`LazyKernel.numpy_twin`; an interpreted kernel
#: :data:`INTERPRET_WEIGHT` per entry):
#: about 0.25 s, what numba's import, runtime start and first kernel loads cost on a
#: reference machine. Renting until the rent paid equals the price, a process never pays
#: more than about twice numba's start, and one computing a few Jacobians of up to a few
#: 10^5 nonzeros never pays it; a preparation that will clearly need more says so first
#: (:func:`expect`) and the kernels load at once.
FALLBACK_BUDGET = 25_000_000
_BUDGET = [FALLBACK_BUDGET]


#: A kernel called before numba is loaded on inputs of at most this many entries in all runs
#: its own code in the interpreter (:attr:`LazyKernel.python`: the same results), drawing
#: :data:`INTERPRET_WEIGHT` times their size from the budget: the first Jacobians of a small
#: function then never wait for numba's import and runtime.
INTERPRET_BELOW = 65_536
INTERPRET_WEIGHT = 40

#: Budget units a numpy twin's call draws whatever its size (numpy's dispatch of its few
#: operations, about 5 µs more than a compiled call), besides its weight per entry
#: (:meth:`LazyKernel.numpy_twin`).
TWIN_CALL_UNITS = 500


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


def expect(work: int) -> None:
    """A computation about to do ``work`` budget units on the fallback paths says so first.

    When the budget left cannot cover it, it is spent now: the compiled kernels serve the
    whole computation instead of taking over after a budget's worth of slower work (the same
    results either way).

    Examples
    --------
    >>> from sparsejac.kernels import expect, use_fallback
    >>> expect(0)                      # nothing to do: the budget is unchanged
    """
    if "numba" not in sys.modules and work > _BUDGET[0]:
        _BUDGET[0] = 0


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
        #: whether a tiny input may run interpreted before numba is loaded (INTERPRET_BELOW):
        #: for kernels whose work is about proportional to their input (a single greedy
        #: pass, a replay), never for searches whose work is their iterations
        interpret = options.get("interpret", False)
        self.interpret = bool(interpret)
        #: the largest input (entries in all) run interpreted: INTERPRET_BELOW, or the
        #: declaration's own bound (``interpret=<int>``, for a single pass whose work per
        #: entry is larger, as an ordering's heap)
        self.interpret_below = (INTERPRET_BELOW if interpret is True else int(interpret))
        #: budget units drawn per entry of an interpreted call (INTERPRET_WEIGHT, or the
        #: declaration's ``interpret_weight=``: its measured interpreted cost per entry)
        self.interpret_weight = int(options.get("interpret_weight", INTERPRET_WEIGHT))
        self.options = {"cache": True, **options}
        self.options.pop("interpret", None)
        self.options.pop("interpret_weight", None)
        self._compiled: Any = None
        self._python: Callable[..., Any] | None = None
        #: a vectorised numpy function computing the same outputs (:meth:`numpy_twin`)
        self.twin: Callable[..., Any] | None = None
        #: budget units a twin's call draws per entry of its arrays: what it costs more than
        #: the compiled kernel (:meth:`numpy_twin`)
        self.twin_weight = 1.0
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
                    _notice_compilation(self._compiled)
        return self._compiled

    @property
    def python(self) -> Callable[..., Any]:
        """The kernel's own code, run by the interpreter (the kernels it calls too).

        The same operations in the same order, so the same results bit for bit as the
        compiled kernel (IEEE arithmetic and the C library's ``math`` functions either way),
        a hundred times slower: for a few calls on tiny inputs before numba is loaded.
        """
        if self._python is None:
            self._python = _interpreted(self)
        return self._python

    def pick(self, work: int) -> Any:
        """The compiled kernel, or :attr:`python` for a call of ``work`` element operations.

        :attr:`python` while numba is not loaded, ``work`` is at most
        :data:`INTERPRET_BELOW` and :func:`use_fallback` allows it (the same results either
        way).
        """
        compiled = self._compiled
        if compiled is not None:
            return compiled
        if work <= INTERPRET_BELOW and use_fallback(INTERPRET_WEIGHT * work):
            return self.interpreted
        return self.compiled

    def interpreted(self, *args: Any) -> Any:
        """Call :attr:`python` with the compiled kernel's floating-point semantics.

        numpy's scalar warnings are silenced (compiled code wraps and overflows silently);
        where the interpreter raises instead (``math.exp`` of a large number, a float division
        by zero), the arrays it was given get their contents back (a kernel may have added
        into them already) and the compiled kernel answers.
        """
        return self.guarded(self.python, *args)

    def guarded(self, fn: Callable[..., Any], *args: Any) -> Any:
        """``fn(*args)`` (the interpreted kernel or a numpy twin) with compiled semantics.

        As :meth:`interpreted`: warnings silenced; where ``fn`` raises an arithmetic error,
        the arrays get their contents back and the compiled kernel answers.
        """
        kept = [(a, a.copy()) for a in args
                if isinstance(a, np.ndarray) and a.flags.writeable and a.size]
        try:
            with np.errstate(all="ignore"):
                return fn(*args)
        except (ArithmeticError, ValueError):
            for a, before in kept:
                a[...] = before
            return self.compiled(*args)

    def numpy_twin(self, fn: _F, weight: float = 1.0) -> _F:
        """Register ``fn``, which computes this kernel's outputs with vectorised numpy.

        Before numba is loaded, a call takes the twin while :func:`use_fallback` allows
        :data:`TWIN_CALL_UNITS` plus ``weight`` units per entry of its arrays (before
        interpreting the kernel): the same outputs bit for bit (integer results, or the same
        floating-point operations in the same order), tested against the kernel. ``weight``
        is what the twin costs more than the compiled kernel per entry, in units of about
        10 ns, as ``benchmarks/fallback.py`` measures it.
        """
        self.twin = fn
        self.twin_weight = float(weight)
        return fn

    def __call__(self, *args: Any) -> Any:
        compiled = self._compiled
        if compiled is None:
            if (self.interpret or self.twin is not None) and "numba" not in sys.modules:
                size = sum(a.size for a in args if hasattr(a, "size"))
                if self.twin is not None and use_fallback(
                        TWIN_CALL_UNITS + int(self.twin_weight * size)):
                    with np.errstate(all="ignore"):  # compiled code warns of nothing
                        return self.twin(*args)
                if (self.interpret and size <= self.interpret_below
                        and use_fallback(self.interpret_weight * size)):
                    return self.interpreted(*args)
            compiled = self.compiled
        return compiled(*args)

    def __repr__(self) -> str:
        state = "compiled" if self._compiled is not None else "not loaded yet"
        return f"<kernel {self.fn.__module__}.{self.__qualname__} ({state})>"


def _interpreted(lazy: LazyKernel) -> Callable[..., Any]:
    """``lazy``'s function with a namespace in which its module's kernels are interpreted."""
    module = sys.modules[lazy.fn.__module__]
    space = dict(vars(module))
    for name, value in list(space.items()):
        if isinstance(value, LazyKernel):
            if value.fn.__module__ == module.__name__:
                fn = value.fn
                space[name] = types.FunctionType(fn.__code__, space, fn.__name__,
                                                 fn.__defaults__, fn.__closure__)
            else:  # a kernel imported from another module: interpreted in its own
                space[name] = value.python
    fn = lazy.fn
    own = space.get(fn.__name__)
    if isinstance(own, types.FunctionType) and own.__code__ is fn.__code__:
        return own
    return types.FunctionType(fn.__code__, space, fn.__name__, fn.__defaults__,
                              fn.__closure__)


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
                    _notice_compilation(value._compiled)
            elif value._compiled is None:
                _bind(value.fn.__module__)  # a kernel imported from another module
            names[name] = value._compiled


_NOTICED = [False]


def cache_missing(dispatcher: Any) -> bool:
    """Whether numba's on-disk cache lacks an up-to-date copy of this kernel.

    True when the cache index is absent, or older than the kernel's source file and stale by
    numba's own test (its stamp of the source, content or time depending on the numba
    version, differs: numba then compiles on the first call); False when it is there, and
    where the cache cannot be inspected (a kernel without ``cache=True``, another numba).

    Examples
    --------
    >>> from sparsejac.kernels import cache_missing
    >>> cache_missing(len)  # not a numba kernel
    False
    """
    try:
        cache_file = dispatcher._cache._cache_file
        index = cache_file._index_path
        source = dispatcher.py_func.__code__.co_filename
        if not os.path.exists(index):
            return True
        if os.stat(index).st_mtime >= os.stat(source).st_mtime:
            return False
        return not cache_file._load_index()  # numba's own freshness test: {} when stale
    except Exception:  # an inspection of numba's internals: no claim
        return False


def _notice_compilation(dispatcher: Any) -> None:
    """Watch ``dispatcher``: when it is about to compile, tell the user (once per process).

    numba's dispatcher compiles (or loads from its cache) each new signature through its
    ``compile`` method; the watch checks the cache first (:func:`cache_missing`).
    """
    compile_ = getattr(dispatcher, "compile", None)
    if _NOTICED[0] or compile_ is None:  # (NUMBA_DISABLE_JIT=1: the function itself)
        return

    def compile(sig: Any) -> Any:
        if not _NOTICED[0] and cache_missing(dispatcher):
            _NOTICED[0] = True
            _warn_compiling()
        return compile_(sig)

    with contextlib.suppress(AttributeError):  # another numba's dispatcher: no notice
        dispatcher.compile = compile


def _outside_level() -> int:
    """The ``stacklevel`` of the user's line: the innermost caller outside sparsejac.

    Frames of numba and of the standard library are skipped too (a ``cached_property``
    between the user and a kernel); an installed library that called sparsejac counts as the
    user's.
    """
    import sysconfig

    import numba

    paths = sysconfig.get_paths()
    ours = (os.path.dirname(__file__), os.path.dirname(numba.__file__))
    stdlib = (paths["stdlib"], paths["platstdlib"])
    installed = (paths["purelib"], paths["platlib"])

    def inside(name: str) -> bool:
        return name.startswith(ours) or (name.startswith(stdlib)
                                         and not name.startswith(installed))

    frame: Any = sys._getframe(2)
    level = 2
    while frame is not None and inside(frame.f_code.co_filename):
        frame, level = frame.f_back, level + 1
    return level


def _warn_compiling() -> None:
    from sparsejac.errors import KernelCompilationWarning

    warnings.warn(
        "sparsejac is compiling its numba kernels for this machine: this first use takes "
        "several seconds more, once; later runs load them from numba's cache. Run "
        "`sparsejac warm-up` (or sparsejac.warm_up()) after installing to compile the common "
        "ones ahead.", KernelCompilationWarning, stacklevel=_outside_level())


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
