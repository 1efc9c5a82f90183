"""Buffers made inside ``f`` by ``np.zeros(n)`` and friends become traceable.

The most common way to write a right-hand side fills a buffer::

    out = np.zeros(n)
    out[1:-1] = (u[2:] - 2 * u[1:-1] + u[:-2]) / h**2
    np.add.at(out, idx, flux)

``np.zeros(n)`` has no traced argument, so numpy never asks the tracer, and a plain array
cannot hold traced values. While a trace runs, the creation functions of :data:`CREATORS`
(``numpy.zeros``, ``ones``, ``empty``, ``full``, ``eye``, ``identity``, ``copy`` and the
``_like`` forms given a plain prototype, and ``np.array`` of a plain array, a float copy;
not ``arange`` and ``linspace``, which are grids and index arrays far more often than
buffers, used as plain arrays) are replaced by
wrappers that, **when called from the traced function's own code in the tracing thread**,
return a *constant* traced array with the same value, shape and
dtype: it can then receive traced values (slices, masks, fancy indices, ``+=``, ``np.add.at``,
``np.put``), be read back, reshaped and returned. Everywhere else (another thread, numpy,
scipy or sparsejac calling them) the wrappers call the original function unchanged. The
wrappers are installed when the first trace of the process starts and removed when the last
one ends, under a lock, so outside a trace numpy is numpy.
"""

from __future__ import annotations

import builtins
import contextlib
import dis
import functools
import importlib.abc
import sys
import threading
import types
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from sparsejac.kernels import ForkSafeLock
from sparsejac.tracing.callers import user_frame
from sparsejac.tracing.operands import holds_tracer
from sparsejac.tracing.program import current_trace

__all__ = ["CREATORS", "bare_names_traced", "buffers_traced"]

#: numpy creation functions whose result, made by the traced function, becomes traceable.
CREATORS: tuple[str, ...] = ("zeros", "ones", "empty", "full", "zeros_like", "ones_like",
                             "empty_like", "full_like", "copy", "eye", "identity")

#: numpy's converters: called from f's code with a list or tuple holding traced values
#: (``np.array([y[0], 0.0, y[1]])``), they give one traced array, as the tracer's rule for
#: ``np.array(..., like=x)`` does; given a traced array, what numpy gives for an ndarray (the
#: array itself, or a copy in the asked layout); anything else goes to numpy unchanged.
LIFTERS: tuple[str, ...] = ("array", "asarray", "asanyarray", "ascontiguousarray",
                            "asfortranarray")

_LOCK = ForkSafeLock(reentrant=True)  # re-entered by nested imports of numba's modules
_ACTIVE = [0]  # traces running in this process
_ORIGINALS: dict[str, Callable[..., Any]] = {}


def _objects_or_complex(obj: Any, dtype: Any) -> bool:
    """An object array asked for, or a complex constant among the values.

    Those take numpy's own path: an object array of Tracers, followed element by element.
    """
    if dtype is not None and np.dtype(dtype) == np.dtype(object):
        return True
    if isinstance(obj, (list, tuple)):
        return any(_objects_or_complex(o, None) for o in obj)
    return isinstance(obj, (complex, np.complexfloating))


def _lifter(name: str, original: Callable[..., Any]) -> Callable[..., Any]:
    scalars = (float, int, bool, np.float64)

    def convert(*args: Any, **kwargs: Any) -> Any:
        obj: Any = args[0] if args else kwargs.get("object", kwargs.get("a"))
        kind: Any = type(obj)
        if kind is np.ndarray and name == "array" and obj.dtype.kind != "O":
            result = original(*args, **kwargs)
            trace = current_trace()  # (f's own copy of a plain array: a buffer, see _buffer)
            if trace is not None and _buffer(trace, result, args, kwargs) and \
                    _from_user_code(LIFTERS):
                from sparsejac.tracing.tracer import Tracer

                return Tracer(trace, trace.const(result))
            return result
        if kind in scalars or (kind is np.ndarray and obj.dtype.kind != "O"):
            return original(*args, **kwargs)  # the usual case (numpy's and sparsejac's calls)
        trace = current_trace()
        dtype = args[1] if len(args) > 1 else kwargs.get("dtype")
        if (trace is not None and not trace.closed
                and (holds_tracer(obj, 0) or (isinstance(obj, (list, tuple))  # (0: a Tracer)
                                              and holds_tracer(obj)
                                              and not _objects_or_complex(obj, dtype)))
                and _from_user_code(LIFTERS)):
            from sparsejac.tracing.hooks import registry

            return registry().function(original, args, kwargs)
        result = original(*args, **kwargs)
        if (trace is not None and not trace.closed and isinstance(obj, (list, tuple))
                and isinstance(result, np.ndarray) and result.dtype.kind == "f"
                and result.ndim and _from_user_code(LIFTERS)):
            # np.array([0.0] * n) made in f: a buffer as np.zeros(n) (a model exported from
            # CellML fills one element by element)
            from sparsejac.tracing.tracer import Tracer

            return Tracer(trace, trace.const(result))
        return result

    convert.__name__ = convert.__qualname__ = name
    convert.__doc__ = original.__doc__
    convert.__wrapped__ = original  # type: ignore[attr-defined]
    convert.sparsejac_buffer_wrapper = True  # type: ignore[attr-defined]
    return convert


def _buffer(trace: Any, result: Any, args: Any, kwargs: Any) -> bool:
    """Whether ``np.array(a)`` of a plain array, made in f's code, is a buffer.

    As ``np.copy(a)`` (see :data:`CREATORS`): a float copy, which can receive traced values.
    Power-flow code starts its voltage vector with ``V = np.array(V_set, dtype=float)`` and
    writes the unknowns into it (found from outside: refused before, with a message about
    the write). ``copy=False`` and calls from numpy, scipy or sparsejac give numpy's result.
    """
    copy = args[2] if len(args) > 2 else kwargs.get("copy", True)
    return (not trace.closed and copy is True and isinstance(result, np.ndarray)
            and result.dtype.kind == "f" and bool(result.ndim))



_THROUGH = threading.local()  # .depth: library functions traced through their own code


@contextmanager
def through_library() -> Iterator[None]:
    """Treat the numpy calls of a pure-numpy library function as the traced function's own.

    While it runs (in this thread), its ``np.asarray`` of a traced argument keeps it traced
    and its ``np.zeros`` buffers can receive traced values, as in ``f`` itself (see
    :func:`sparsejac.primitives.core.register_through`).
    """
    _THROUGH.depth = getattr(_THROUGH, "depth", 0) + 1
    try:
        yield
    finally:
        _THROUGH.depth -= 1


def _from_user_code(names: tuple[str, ...] = CREATORS) -> bool:
    """Whether the creation call comes from the traced function's code (not a library's).

    The calling frame must be the user's (:func:`~sparsejac.tracing.callers.user_frame`) and
    its current call must be of a creation function itself: compiled code leaves no frame,
    so a call like ``np.random.rand(3)``, whose C code makes its own arrays with
    ``np.empty``, shows the user's frame calling ``rand``. Those arrays stay plain (a traced
    one would reach code that casts it to an ndarray unchecked).
    """
    frame = sys._getframe(2)
    return ((user_frame(frame) or (getattr(_THROUGH, "depth", 0) > 0 and _library_frame(frame)))
            and _calls_a_creator(frame, names))


def _library_frame(frame: Any) -> bool:
    """A frame of a library traced through (neither numpy's nor sparsejac's own code)."""
    top = str(frame.f_globals.get("__name__", "")).partition(".")[0]
    return top not in ("numpy", "sparsejac")


def _calls_a_creator(frame: Any, names: tuple[str, ...] = CREATORS) -> bool:
    """Whether ``frame``'s current call is of one of ``names`` (True where unknown)."""
    how = _callee(frame.f_code, frame.f_lasti)
    if how is None:
        return True  # no positions in the bytecode: as before, the frame's call
    kind, name = how
    if kind == "attr":  # np.zeros(n), xp.zeros(n)
        return name in names
    for space in (frame.f_locals, frame.f_globals, vars(builtins)):
        if name in space:  # zeros(n) after `zeros = np.zeros` inside f
            return getattr(space[name], "sparsejac_buffer_wrapper", False) is True
    return True


@functools.lru_cache(maxsize=4096)
def _callee(code: types.CodeType, lasti: int) -> tuple[str, str] | None:
    """How the call at ``lasti`` loads its callable: ``("attr", name)`` or ``("name", name)``.

    The load is the instruction that starts where the call expression starts and ends last
    before it ends (``np.zeros`` in ``np.zeros(n)``), from the bytecode's source positions.
    None when the code has no positions or the call is not found.
    """
    call = None
    loads = []
    for ins in dis.get_instructions(code):
        pos = ins.positions
        if pos is None or pos.lineno is None or pos.col_offset is None:
            continue
        if ins.offset == lasti:
            call = pos
        elif ins.opname.startswith("LOAD_"):
            loads.append((pos, ins))
    if call is None or call.end_lineno is None or call.end_col_offset is None:
        return None
    end = (call.end_lineno, call.end_col_offset)
    best = None
    for pos, ins in loads:
        stop = (pos.end_lineno or 0, pos.end_col_offset or 0)
        if (pos.lineno, pos.col_offset) == (call.lineno, call.col_offset) and stop < end and (
                best is None or stop > best[0]):
            best = (stop, ins)
    if best is None or not isinstance(best[1].argval, str):
        return None
    ins = best[1]
    return ("attr" if ins.opname in ("LOAD_ATTR", "LOAD_METHOD") else "name", ins.argval)


def _wrapper(name: str, original: Callable[..., Any]) -> Callable[..., Any]:
    def create(*args: Any, **kwargs: Any) -> Any:
        if name in ("full", "full_like"):
            fill = args[1] if len(args) > 1 else kwargs.get("fill_value")
            from sparsejac.tracing.tracer import Tracer

            if isinstance(fill, Tracer) or (isinstance(fill, (list, tuple)) and any(
                    isinstance(v, Tracer) for v in fill)):  # a traced fill: the tracer's rule
                from sparsejac.tracing.hooks import registry

                return registry().function(original, args, kwargs)
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
            for name in LIFTERS:
                original = getattr(np, name)
                _ORIGINALS[name] = original
                setattr(np, name, _lifter(name, original))
            sys.meta_path.insert(0, _NUMBA_IMPORTS)
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
                with contextlib.suppress(ValueError):
                    sys.meta_path.remove(_NUMBA_IMPORTS)


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



class _RestoringLoader(importlib.abc.Loader):
    """A loader whose modules execute with numpy's own creation functions in place."""

    def __init__(self, loader: Any) -> None:
        self._loader = loader

    def create_module(self, spec: Any) -> Any:
        return self._loader.create_module(spec)

    def exec_module(self, module: Any) -> None:
        with _numpy_restored():
            self._loader.exec_module(module)

    def __getattr__(self, name: str) -> Any:  # get_source, get_data, ... of the real loader
        return getattr(self._loader, name)


class _NumbaImportFinder(importlib.abc.MetaPathFinder):
    """While a trace runs, numba's modules execute with numpy's own creation functions.

    numba registers its implementations of numpy's functions by identity when its modules
    are imported, which its compiler does on its first compilation: if the traced function
    calls a ``@numba.njit`` function, that can happen inside the trace, where ``np.zeros``
    and friends are the wrappers. Without this finder, numba would know the wrappers instead
    of numpy's functions for the rest of the process, and every later compilation calling
    ``np.zeros`` would fail.
    """

    def find_spec(self, name: str, path: Any, target: Any = None) -> Any:
        if name.partition(".")[0] != "numba":
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None:
                if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                    spec.loader = _RestoringLoader(spec.loader)
                return spec
        return None


_NUMBA_IMPORTS = _NumbaImportFinder()


def _global_spaces(f: Any, depth: int = 4) -> list[dict[str, Any]]:
    """The module namespaces of ``f`` and of the functions it reaches by name.

    Followed ``depth`` levels deep: the functions ``f`` names in its module or as an
    attribute of a module it names (``model.rates``), closes over (sparsejac's adapters wrap
    the user's function in closures) or is a method or partial of. Library modules (numpy,
    scipy, sparsejac, numba) are left out: their own calls of numpy's creators stay plain.
    """
    from sparsejac.tracing.callers import LIBRARIES

    spaces: dict[int, dict[str, Any]] = {}
    seen: dict[int, int] = {}  # the most levels left an object was visited with

    def first(obj: Any, level: int) -> bool:
        if seen.get(id(obj), -1) >= level:
            return False
        seen[id(obj)] = level
        return True

    def visit(obj: Any, level: int) -> None:
        if level < 0 or seen.get(id(obj), -1) >= level:
            return
        if isinstance(obj, types.MethodType):  # the function, and its object's attributes
            visit(obj.__func__, level)
            obj = obj.__self__
            level -= 1
        while isinstance(obj, functools.partial):
            obj = obj.func
        if not isinstance(obj, types.FunctionType):
            if isinstance(obj, type) or _library_object(obj) or not first(obj, level):
                return
            # an object: sparsejac's adapters, a model whose methods f calls
            attrs = list(getattr(obj, "__dict__", {}).values())
            attrs += [getattr(obj, n, None) for n in getattr(type(obj), "__slots__", ())]
            attrs += [v for k in type(obj).__mro__[:-1] for v in vars(k).values()
                      if isinstance(v, types.FunctionType)]
            for item in attrs:
                visit(item, level - 1)
            return
        if not first(obj, level):
            return
        space = obj.__globals__
        if str(space.get("__name__", "")).partition(".")[0] not in LIBRARIES:
            spaces.setdefault(id(space), space)
        code = obj.__code__
        named = [space.get(name) for name in code.co_names]
        named += [c.cell_contents for c in (obj.__closure__ or ()) if _has_contents(c)]
        named += [*(obj.__defaults__ or ()), *(obj.__kwdefaults__ or {}).values()]
        modules = [m for m in named if isinstance(m, types.ModuleType)
                   and m.__name__.partition(".")[0] not in LIBRARIES]
        named += [getattr(m, name, None) for m in modules for name in code.co_names]
        for item in named:
            visit(item, level - 1)

    visit(f, depth)
    return list(spaces.values())


def _library_object(obj: Any) -> bool:
    """A value of numpy's, scipy's or a builtin type (an array, a list): nothing to visit.

    sparsejac's own objects are visited: its adapters hold the user's function.
    """
    module = str(getattr(type(obj), "__module__", "builtins")).partition(".")[0]
    return module in ("numpy", "scipy", "numba", "builtins")


def _has_contents(cell: Any) -> bool:
    try:
        cell.cell_contents  # noqa: B018 - an empty cell raises
    except ValueError:
        return False
    return True


#: the names bound to a wrapper by :func:`bare_names_traced`, by (module namespace, name):
#: ``[traces using it, namespace, numpy's function, wrapper]`` (concurrent traces of one
#: module's functions: bound back when the last one ends)
_BARE: dict[tuple[int, str], list[Any]] = {}


@contextmanager
def bare_names_traced(f: Any) -> Iterator[None]:
    """Rebind numpy's creators bound by name in ``f``'s modules for the trace.

    ``from numpy import zeros, array`` (or ``from numpy import *``, as models exported from
    CellML write) binds numpy's own functions, which the wrappers installed on the numpy
    module do not reach: a buffer ``zeros(n)`` made in ``f`` would stay plain. While ``f`` is
    traced, such a name in ``f``'s module (and in the modules of the functions ``f`` names or
    closes over) is bound to the wrapper; afterwards it is bound back, where it still is the
    wrapper. Outside the trace the wrappers call numpy's functions unchanged.
    """
    patched: list[tuple[int, str]] = []
    with _LOCK:
        for space in _global_spaces(f):
            for name in (*CREATORS, *LIFTERS):
                original, wrapper = _ORIGINALS.get(name), getattr(np, name)
                if original is None or wrapper is original:
                    continue
                key = (id(space), name)
                held = _BARE.get(key)
                if held is not None and held[1] is space and space.get(name) is wrapper:
                    held[0] += 1  # another thread's trace bound it: bound until both end
                elif space.get(name) is original:
                    space[name] = wrapper
                    _BARE[key] = [1, space, original, wrapper]
                else:
                    continue
                patched.append(key)
    try:
        yield
    finally:
        with _LOCK:
            for key in patched:
                held = _BARE[key]
                held[0] -= 1
                if held[0] == 0:
                    del _BARE[key]
                    _, space, original, wrapper = held
                    if space.get(key[1]) is wrapper:
                        space[key[1]] = original
