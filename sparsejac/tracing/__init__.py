"""Tracing: run a numpy function on Tracers and record it as a :class:`Program`.

:func:`trace` is the one entry point used by detection and by both AD modes. It validates
``x``, runs ``f`` once on a Tracer standing for ``x`` (plus non-differentiated *params*, such
as an ODE's ``t``), and checks what ``f`` returned.
"""

from __future__ import annotations

import gc
import re
import sys
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np

from sparsejac.errors import TracedConversionError, TraceMismatchError, UnsupportedPrimitiveError
from sparsejac.tracing import library
from sparsejac.tracing.buffers import bare_names_traced, buffers_traced
from sparsejac.tracing.callers import explain_failure, object_loop_error, take_refusal
from sparsejac.tracing.guards import ParamGuards
from sparsejac.tracing.hooks import registry
from sparsejac.tracing.library import library_traced
from sparsejac.tracing.operands import lift_objects
from sparsejac.tracing.program import (
    INPUT,
    PARAM,
    Node,
    Program,
    Trace,
    Var,
    recording,
)
from sparsejac.tracing.tracer import Tracer

__all__ = ["Node", "Program", "Tracer", "Var", "as_float_input", "check_args", "check_kwargs",
           "check_traced_value", "no_cyclic_gc", "trace"]


#: how compiled extension code words a type error about an argument it cannot take
_COMPILED_REFUSAL = re.compile(r"\bnot Tracer\b")


def check_args(args: Any) -> tuple[Any, ...]:
    """``args`` as a tuple: the further positional arguments of ``f``.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsejac.validation import check_args
    >>> check_args([1, 2])
    (1, 2)
    >>> check_args(np.ones(3))
    Traceback (most recent call last):
        ...
    TypeError: `args` must be a tuple of further arguments of f; got ndarray (for one \
argument write args=(value,)).
    """
    if isinstance(args, (tuple, list)):
        return tuple(args)
    raise TypeError(
        f"`args` must be a tuple of further arguments of f; got {type(args).__name__} (for "
        "one argument write args=(value,)).")


def check_kwargs(kwargs: Any) -> dict[str, Any]:
    """``kwargs`` (or None) as a dict: the keyword arguments of ``f``.

    Examples
    --------
    >>> from sparsejac.validation import check_kwargs
    >>> check_kwargs(None), check_kwargs({"a": 1})
    ({}, {'a': 1})
    """
    if kwargs is None:
        return {}
    if isinstance(kwargs, Mapping) and all(isinstance(k, str) for k in kwargs):
        return dict(kwargs)
    raise TypeError(
        f"`kwargs` must be a dict of keyword arguments of f; got {type(kwargs).__name__}.")


def _refuse_subclass(x: Any, name: str) -> None:
    """Refuse a ``numpy.matrix`` or masked array: its operators are not an ndarray's.

    Found from outside: ``x * x`` of a matrix ``x0`` was differentiated as the elementwise
    square.
    """
    ma = sys.modules.get("numpy.ma")
    if isinstance(x, np.matrix):
        what, way = ("a numpy.matrix (its `*` and `**` are matrix products)",
                     f"pass np.asarray({name}) and write f with `@` for matrix products")
    elif ma is not None and isinstance(x, ma.MaskedArray):
        what, way = ("a masked array (the mask would be dropped)",
                     f"pass {name}.filled(...) or {name}.compressed() and apply the mask in f")
    else:
        return
    raise TypeError(f"`{name}` must be a plain numpy array; got {what}: f would be traced on "
                    f"a plain array, a different function. To differentiate it, {way}")


def as_float_input(x: Any, name: str = "x") -> np.ndarray:
    """``x`` as a fresh float64 array, or a clear error for what cannot be differentiated.

    Examples
    --------
    >>> from sparsejac.tracing import as_float_input
    >>> as_float_input([1, 2])
    array([1., 2.])
    >>> as_float_input([1j], "x0")
    Traceback (most recent call last):
        ...
    TypeError: `x0` must be an array of real numbers; got an array of complex numbers
    """
    if type(x) is np.ndarray and x.dtype == np.float64 and x.size:  # the common case
        arr = x.copy()
        flat = arr.reshape(-1)
        # isfinite + all: a dot product (0.7 us less at small sizes) warns of an overflow
        # for finite values beyond 1e154, and a long one wakes OpenBLAS's threads, which keep
        # spinning on another core while the trace runs
        if not np.isfinite(flat).all():
            bad = int(np.flatnonzero(~np.isfinite(arr.ravel()))[0])
            raise ValueError(
                f"`{name}` must be finite; element {bad} (flat index) is {arr.ravel()[bad]}")
        return arr
    if isinstance(x, Tracer):
        raise TypeError(f"`{name}` is already a traced array; nested tracing is not supported")
    _refuse_subclass(x, name)
    try:
        arr = np.array(x, copy=True)
    except Exception as exc:
        raise TypeError(
            f"`{name}` must be an array of real numbers; got {type(x).__name__}"
        ) from exc
    if arr.dtype == object or arr.dtype.kind not in "biuf":
        kind = ("an array of complex numbers" if arr.dtype.kind == "c" else
                f"an array of dtype {arr.dtype}" if isinstance(x, np.ndarray) else
                f"{type(x).__name__} {x!r:.60}")
        hint = " (a scipy sparse matrix: pass x.toarray())" if hasattr(x, "toarray") else ""
        raise TypeError(f"`{name}` must be an array of real numbers; got {kind}{hint}")
    if arr.size == 0:
        raise ValueError(f"`{name}` must have at least one element; got shape {arr.shape}")
    arr = arr.astype(np.float64, copy=False)
    if not np.all(np.isfinite(arr)):
        bad = int(np.flatnonzero(~np.isfinite(arr.ravel()))[0])
        raise ValueError(
            f"`{name}` must be finite; element {bad} (flat index) is {arr.ravel()[bad]}"
        )
    return arr


@contextmanager
def _scipy_sparse_defers() -> Iterator[None]:
    """Let ``L @ tracer`` (and ``L.dot(tracer)``, ``L * tracer`` for an spmatrix) reach the tracer.

    scipy's ``_matmul_dispatch`` would otherwise convert the Tracer with ``np.asarray``. While
    a trace runs it hands Tracers (and only them) to ``np.matmul``, whose Tracer override
    binds the sparse linear map. ``_coo_base`` has its own ``_matmul_dispatch`` and ``dot``
    (n-D COO), so they are patched as well. (Returning ``NotImplemented`` instead is not
    enough: for an ``spmatrix``, ``L * u`` would then fall back to the Tracer's elementwise
    ``__rmul__``.)
    """
    try:
        from scipy.sparse._base import _spbase
        from scipy.sparse._coo import _coo_base
    except ImportError:  # pragma: no cover - scipy moved its base classes
        yield
        return
    originals = {(c, name): c.__dict__[name] for c in (_spbase, _coo_base)
                 for name in ("_matmul_dispatch", "dot") if name in c.__dict__}
    if any(getattr(o, "_sparsejac_patch", False) for o in originals.values()):
        yield
        return

    def patched(original: Any) -> Any:
        def method(self: Any, other: Any) -> Any:
            if isinstance(other, Tracer) or getattr(other, "_sparsejac_complex", False):
                return np.matmul(self, other)  # (a complex pair: part by part)
            return original(self, other)

        method._sparsejac_patch = True  # type: ignore[attr-defined]
        return method

    for (c, name), original in originals.items():
        setattr(c, name, patched(original))
    try:
        yield
    finally:
        for (c, name), original in originals.items():
            setattr(c, name, original)


def _output_var(trace: Trace, out: Any, name: str) -> Var:
    out = lift_objects(out)  # np.array([...]) of traced scalars
    if isinstance(out, np.ndarray) and out.dtype == object and all(
            isinstance(v, (int, float, np.integer, np.floating)) for v in out.flat):
        # an object array of plain numbers (numpy's object loops over traced scalars whose
        # results came out constant, as np.where picking numbers): its values
        out = np.asarray(out.tolist(), dtype=np.float64)
    if getattr(out, "_sparsejac_complex", False):
        raise TypeError(f"`{name}` must return real numbers; it returned an array of complex "
                        "numbers (return `.real` and `.imag`, or np.abs, as separate outputs)")
    if isinstance(out, (list, tuple)):
        out = registry().as_array(out)
    if isinstance(out, Tracer):
        if out._trace is not trace:
            raise ValueError(f"`{name}` returned an array from another trace")
        var = out._var
    elif isinstance(out, (bool, int, float, np.number, np.bool_, np.ndarray)):
        var = trace.const(np.asarray(out))
    else:
        raise TypeError(
            f"`{name}` must return an array of numbers (or a list of them); "
            f"got {type(out).__name__}"
        )
    if var.dtype == object or var.dtype.kind not in "biuf":
        kind = "complex numbers" if var.dtype.kind == "c" else f"dtype {var.dtype}"
        raise TypeError(f"`{name}` must return real numbers; it returned an array of {kind}")
    if var.dtype.kind == "b":
        raise TypeError(
            f"`{name}` returned a boolean array; a Jacobian needs numbers (convert with "
            ".astype(float) if that is what you mean)"
        )
    return var


def trace(
    f: Callable[..., Any],
    x: Any,
    *,
    local: bool = False,
    params: Sequence[Any] = (),
    name: str = "f",
    check: bool = False,
) -> Program:
    """Record ``f(x, *params)`` as a program.

    Parameters
    ----------
    f : callable
        Called once as ``f(x_tracer, *param_tracers)``.
    x : array_like
        The point; its values are used to evaluate ``f`` (never mutated).
    local : bool
        Allow Python control flow on traced values (the program is then valid at ``x`` only).
    params : sequence of array_like
        Further traced, non-differentiated inputs.
    name : str
        Name of ``f`` in error messages.
    check : bool
        Call ``f`` once more, for real, and compare (:func:`check_traced_value`).

    Returns
    -------
    Program

    Examples
    --------
    >>> import numpy as np
    >>> import sparsejac
    >>> from sparsejac.tracing import trace
    >>> prog = trace(lambda x: np.sin(x) * x[0], np.ones(3))
    >>> [node.prim.name for node in prog.nodes], prog.out.shape
    (['sin', 'gather', 'multiply'], (3,))
    """
    registry()  # a clear error if no primitive registry is installed
    try:
        prog = _trace_once(f, x, local, params, name)
    except (TracedConversionError, UnsupportedPrimitiveError):
        # f imported a library whose rules are registered on import (scipy.stats inside f's
        # body): register them now and trace once more
        if not library.pending_imported():
            raise
        library.run_deferred()
        prog = _trace_once(f, x, local, params, name)
    if check:
        check_traced_value(f, x, prog, params=params, name=name)
    return prog


_GC_LOCK = threading.Lock()
_GC_PAUSED = [0, False]  # traces running, and whether the collector was enabled before


@contextmanager
def no_cyclic_gc() -> Iterator[None]:
    """Pause Python's cyclic garbage collector while a trace records.

    A trace creates a few objects per recorded operation and frees none, so each automatic
    collection walks the whole growing program: a loop over 10,000 elements traced 2.5x
    slower with it. Reference counting still frees everything as usual; the collector is
    switched back on (if it was on) when the last trace running ends. Preparation
    (:func:`sparsejac.pipeline.prepare`) pauses it too.

    Examples
    --------
    >>> import gc
    >>> from sparsejac.tracing import no_cyclic_gc
    >>> with no_cyclic_gc():
    ...     paused = not gc.isenabled()
    >>> paused, gc.isenabled()
    (True, True)
    """
    with _GC_LOCK:
        if _GC_PAUSED[0] == 0:
            _GC_PAUSED[1] = gc.isenabled()
            gc.disable()
        _GC_PAUSED[0] += 1
    try:
        yield
    finally:
        with _GC_LOCK:
            _GC_PAUSED[0] -= 1
            if _GC_PAUSED[0] == 0 and _GC_PAUSED[1]:
                gc.enable()


#: Relative tolerance of :func:`check_traced_value` (a composite such as ``np.linalg.norm``
#: is recorded as its elementary operations, which may round differently from numpy's own).
TRACE_RTOL = 1e-9


def check_traced_value(f: Callable[..., Any], x: Any, prog: Program, *,
                       params: Sequence[Any] = (), name: str = "f") -> None:
    """One real call ``f(x, *params)`` must give the traced program's value, to rounding.

    Raises
    ------
    TraceMismatchError
        When they differ: ``f`` took another path under the tracer (it branches on its
        input's type: ``isinstance(y, np.ndarray)``, ``np.isscalar``) or uses state that
        changes between calls (unseeded random numbers), and the recorded program is not
        ``f``.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsejac.tracing import check_traced_value, trace
    >>> f = lambda y: np.sin(y) * y[0]
    >>> check_traced_value(f, np.ones(3), trace(f, np.ones(3)))  # the same values: silent
    """
    traced = np.asarray(prog.out.value, dtype=float).reshape(-1)
    try:
        got = f(as_float_input(x).copy(), *params)
    except Exception:  # nothing to compare with (f calls sparsejac's primitives itself)
        return
    try:
        real = np.asarray(got, dtype=float).reshape(-1)
    except (TypeError, ValueError):
        real = None
    if real is not None and real.shape == traced.shape:
        if real.tobytes() == traced.tobytes():
            return  # the usual case: the same operations, the same bits
        finite = np.isfinite(real)
        scale = float(np.max(np.abs(real[finite]), initial=0.0))
        if np.allclose(traced, real, rtol=TRACE_RTOL, atol=TRACE_RTOL * scale, equal_nan=True):
            return
        # outputs that are round-off of larger terms (a residual at its solution, a steady
        # state: A @ x - b at x = solve(A, b)) differ in their last bits with the order of
        # the sums; the terms' scale bounds that
        if np.allclose(traced, real, rtol=TRACE_RTOL, atol=TRACE_RTOL * _term_scale(prog),
                       equal_nan=True):
            return
        diff = np.abs(np.where(np.isnan(real) & np.isnan(traced), 0.0, traced - real))
        k = int(np.nanargmax(np.where(np.isnan(diff), np.inf, diff)))
        what = (f"output {k}: {float(traced[k])!r} traced, {float(real[k])!r} called (the largest "
                "difference)")
    else:
        what = (f"the traced value has {traced.size} entries, the called one "
                f"{'is not an array of numbers' if real is None else f'{real.size}'}")
    raise TraceMismatchError(
        f"`{name}` computes other values when traced than when called with a numpy array "
        f"at the same x ({what}). sparsejac differentiates what f does with its traced "
        "input, so its Jacobian would not be f's. Usual causes: f branches on its input's "
        "type (isinstance(y, np.ndarray), np.isscalar(y[0]), type(y) is ...), which the "
        "traced array answers differently; or f uses state that changes between calls "
        "(unseeded random numbers, a counter). Make f's code path independent of the "
        "input's type and seed its random numbers, or pass `sparsity=` and use mode='fd'."
    )


def _term_scale(prog: Program) -> float:
    """The largest finite magnitude of the values the program computes (its nodes' outputs).

    Not its constants: one large rate constant (3e7 in Robertson's kinetics) multiplies
    small values, and would loosen the check beyond the outputs' own size.
    """
    scale = 0.0
    for node in prog.nodes:
        var = node.out
        if var.dtype.kind != "f" or not var.size:
            continue
        v = np.abs(np.asarray(var.value))
        scale = max(scale, float(np.max(v, where=np.isfinite(v), initial=0.0)))
    return scale


def _raise_swallowed(exc: BaseException) -> None:
    """Raise sparsejac's refusal that compiled code swallowed before raising ``exc``.

    ``scipy.optimize.fsolve`` of a function whose closure holds x: MINPACK converts the
    traced result, sparsejac refuses, and MINPACK raises its own ``error`` instead.
    """
    if type(exc).__module__.partition(".")[0] == "sparsejac":
        return
    message = take_refusal()
    if message is not None:
        refusal = TracedConversionError(message)
        refusal.add_note(f"(it then surfaced as {type(exc).__name__}: {exc})")
        raise refusal from exc


def _trace_once(f: Callable[..., Any], x: Any, local: bool, params: Sequence[Any],
                name: str) -> Program:
    x_arr = as_float_input(x)
    take_refusal()  # (a refusal of an earlier trace in this thread, caught by its caller)
    tr = Trace(local=local)
    xvar = tr.new_input(x_arr, INPUT)
    pvars = tuple(tr.new_input(np.asarray(p), PARAM) for p in params)
    with recording(tr), buffers_traced(), bare_names_traced(f), library_traced(), \
            _scipy_sparse_defers(), no_cyclic_gc():
        try:
            result = f(Tracer(tr, xvar), *(Tracer(tr, v) for v in pvars))
        except TypeError as exc:
            if _COMPILED_REFUSAL.search(str(exc)):
                raise TracedConversionError(
                    f"compiled code received a traced array and refused it ({exc}): it is "
                    "not a numpy function the tracer can follow. If it is the `solve` of a "
                    "scipy.sparse.linalg.splu / factorized factorisation made before `f` was "
                    "traced, call splu(A) (or spsolve(A, b)) inside `f`: a constant A is "
                    "factorised once, when f is traced. Otherwise write the computation with "
                    "the numpy functions of docs/supported.md, or pass `sparsity=` and use "
                    "mode='fd'."
                ) from exc
            loop = object_loop_error(exc)
            if loop is not None:
                raise loop from exc
            explained = explain_failure(exc)
            if explained is exc:
                _raise_swallowed(exc)
                raise
            raise explained from exc
        except Exception as exc:
            if type(exc).__module__.partition(".")[0] != "numba":
                explained = explain_failure(exc)
                if explained is exc:
                    _raise_swallowed(exc)
                    raise
                raise explained from exc
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise TracedConversionError(
                f"a numba-compiled function failed while f was traced ({first}): compiled "
                "code cannot follow a traced array, and a function numba compiles during the "
                "trace sees numpy's creation functions (np.zeros, np.empty, ...) replaced by "
                "the tracer's. Call a numba function inside f only on constants, and once "
                "before tracing so that it is compiled already; write the part that depends "
                "on x with numpy, or pass `sparsity=` and use mode='fd' for this f."
            ) from exc
        out = _output_var(tr, result, name)
    guards = ParamGuards(tr.param_reads, tr.nodes, pvars) if tr.param_reads else None
    return Program(
        x=xvar, params=pvars, nodes=tr.nodes, out=out,
        value_dependent=tr.value_dependent, local=local, ties=tr.ties, guards=guards,
    )

