"""The primitive registry: what sparsejac knows about numpy, in one table.

Two levels, as in JAX's ``jax.numpy`` over ``lax``:

* a **primitive** (:class:`Primitive`) is an operation of the recorded program. It states its
  value (``impl``) and its local Jacobian (``linearize``); the three rules the interpreters
  run, ``pattern`` (dependency sets, for detection), ``jvp`` (tangent blocks, forward mode)
  and ``vjp`` (cotangent blocks, reverse mode), are derived from the local Jacobian by
  :mod:`sparsejac.primitives.derive`, unless the primitive writes one by hand as a measured
  fast path. A family module defines a few primitive *kinds* (elementwise with partial
  derivatives, gathers by position, linear maps, reductions, contractions);
* a **registry entry** (:class:`Entry`) maps one numpy function or ufunc (``np.roll``,
  ``np.add`` and its ``reduce``/``accumulate``/``at`` methods) to a *handler*: the traced
  version of that function, which parses numpy's arguments and binds primitives. Many
  entries share a primitive (every data-movement function binds the one ``gather``).

:func:`dispatch_function` and :func:`dispatch_ufunc` are called from the Tracer's numpy
protocols (through the hook of :mod:`sparsejac.tracing.hooks`, installed when
:mod:`sparsejac.primitives` is imported). A function with no entry raises
:class:`~sparsejac.errors.UnsupportedPrimitiveError` naming it; nothing is guessed.

Rule signatures (``node.inputs[k]`` is the k-th input variable; ``vals[k]`` its value)::

    impl(*vals, **params) -> ndarray                         # the primal, for replays
    linearize(node) -> list[LocalJac | None]                 # the local Jacobian per input
    pattern(node, deps, local) -> csr_array | None           # deps[k]: (size_k, n) bool or None
    jvp(node, vals, tangents, out) -> ndarray | None         # tangents[k]: (p, *shape_k) or None
    vjp(node, vals, out, ct) -> list[ndarray | None]         # ct: (q, *out_shape)

``None`` means "structurally zero" everywhere (no dependency, zero tangent, zero cotangent).

``linearize`` describes the node's local Jacobian with respect to each input as a sparse
matrix whose *structure* is fixed (valid for every x) and whose values are either constants
known when the program is prepared or a function of the primal values. Prepared Jacobians
(:mod:`sparsejac.ad.prepared`) chain these local Jacobians once, fold the constant parts, and
at each evaluation recompute only the value-dependent parts.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeAlias, cast

import numpy as np

from sparsejac.errors import TracedConversionError, UnsupportedPrimitiveError
from sparsejac.primitives import derive
from sparsejac.primitives.depsets import DepSet
from sparsejac.tracing import library
from sparsejac.tracing.operands import lift_objects
from sparsejac.tracing.program import Node, Trace, Var, current_trace
from sparsejac.tracing.tracer import Tracer

__all__ = [
    "FUNCTIONS",
    "OPAQUE",
    "UFUNCS",
    "Entry",
    "LocalJac",
    "Primitive",
    "bind",
    "contiguous",
    "dispatch_function",
    "dispatch_ufunc",
    "find_trace",
    "floats",
    "public_name",
    "register_function",
    "register_library",
    "register_ufunc",
]

Deps: TypeAlias = DepSet

#: Primitives without a local Jacobian of fixed structure, which write their pattern, jvp and
#: vjp rules by hand instead of deriving them: name -> why. Empty today: every primitive
#: states ``linearize`` or has zero derivative (a registry test keeps it so).
OPAQUE: dict[str, str] = {}


@dataclass(frozen=True)
class LocalJac:
    """The local Jacobian ``d out / d input_k`` of one node as a sparse matrix.

    Entry ``e`` is ``(rows[e], cols[e])`` (flat output element, flat input element); the
    structure holds for every x. The values are ``const`` (a scalar or an array aligned with
    the entries) when they are known at preparation, otherwise ``dyn(vals, out)`` computes
    them from the node's input values and output value.
    """

    rows: np.ndarray
    cols: np.ndarray
    const: Any = None
    dyn: Callable[[Sequence[Any], Any], Any] | None = None

    @property
    def nnz(self) -> int:
        """Number of structural entries."""
        return int(self.rows.size)


class Primitive:
    """An operation of the recorded program: its value and its local Jacobian.

    Subclasses set ``name`` and define ``impl`` (the value) and ``linearize`` (the local
    Jacobian); the ``pattern``, ``jvp`` and ``vjp`` rules are derived from the local Jacobian
    (:mod:`sparsejac.primitives.derive`). A subclass overrides one of them only as a measured
    fast path (the registry-driven tests compare it with the derived rule) or when it has no
    local Jacobian of fixed structure (then it is listed in :data:`OPAQUE`).
    ``zero_derivative`` marks operations whose derivative is identically zero (comparisons,
    ``floor``, ...): their outputs are never active.

    Examples
    --------
    A linear primitive states its value and its local Jacobian; its rules are derived:

    >>> import numpy as np
    >>> import sparsejac
    >>> from sparsejac.primitives.core import LocalJac, Primitive, bind
    >>> from sparsejac.tracing import trace
    >>> class Double(Primitive):
    ...     name = "double"
    ...     def impl(self, x):
    ...         return 2.0 * x
    ...     def linearize(self, node):
    ...         k = np.arange(node.out.size)
    ...         return [LocalJac(k, k, const=2.0)]
    >>> prog = trace(lambda x: bind(Double(), (x,)), np.ones(3))
    >>> sparsejac.detection.program_sparsity(prog).nnz
    3
    >>> sparsejac.ad.program_jvp(prog, np.eye(3))[1]
    array([[2., 0., 0.],
           [0., 2., 0.],
           [0., 0., 2.]])
    """

    name: str = "primitive"
    zero_derivative: bool = False
    #: the local Jacobian's values are piecewise constant in x (a selection made at x: the
    #: arg-extremum of ``max``, the permutation of ``sort``): second order treats them as
    #: constants of the point, whose derivative is zero (:mod:`sparsejac.ad.second_order`)
    piecewise_constant: bool = False

    def impl(self, *vals: Any, **params: Any) -> np.ndarray:
        """Evaluate the primitive on plain values."""
        raise NotImplementedError(f"primitive {self.name!r} has no impl rule")

    def pattern(self, node: Node, deps: Sequence[Deps | None], local: bool) -> Deps | None:
        """Dependency sets of the output from those of the inputs (derived from linearize)."""
        out: Deps | None = derive.derived_pattern(node, deps, local)
        return out

    def jvp(
        self, node: Node, vals: Sequence[Any], tangents: Sequence[np.ndarray | None], out: Any
    ) -> np.ndarray | None:
        """Tangent block of the output, shape ``(p, *out_shape)`` (derived from linearize)."""
        return derive.derived_jvp(node, vals, tangents, out)

    def vjp(
        self, node: Node, vals: Sequence[Any], out: Any, ct: np.ndarray
    ) -> list[np.ndarray | None]:
        """Cotangent blocks of the inputs, ``(q, *shape_k)`` each (derived from linearize)."""
        return derive.derived_vjp(node, vals, out, ct)

    def linearize(self, node: Node) -> list[LocalJac | None] | None:
        """Local Jacobians per input (None: inactive input).

        None: the primitive has no local Jacobian of fixed structure and writes its pattern,
        jvp and vjp rules by hand (an *opaque* primitive).
        """
        return None

    def __repr__(self) -> str:
        return f"<primitive {self.name}>"


# ---------------------------------------------------------------------------------------
# the registry
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Entry:
    """How one numpy function (or ufunc method) is traced.

    Attributes
    ----------
    name : str
        Public name, e.g. ``"numpy.roll"`` or ``"numpy.add.at"``.
    family : str
        ``elementwise``, ``movement``, ``indexing``, ``reductions``, ``linalg``, ``creation``.
    handler : callable
        The traced implementation, called with numpy's arguments.
    via : str
        The primitive(s) it binds, or ``"composite"`` when it is written with other
        supported functions.
    note : str
        Restrictions, e.g. "constant `where=` only".

    Examples
    --------
    >>> import numpy as np
    >>> from sparsejac.primitives import FUNCTIONS
    >>> FUNCTIONS[np.roll].name, FUNCTIONS[np.roll].family, FUNCTIONS[np.roll].via
    ('numpy.roll', 'movement', 'gather')
    """

    name: str
    family: str
    handler: Callable[..., Any]
    via: str
    note: str = ""


@dataclass
class UfuncEntry:
    """The methods of one ufunc that are supported, by method name."""

    ufunc: np.ufunc
    methods: dict[str, Entry] = field(default_factory=dict)


FUNCTIONS: dict[Any, Entry] = {}
UFUNCS: dict[np.ufunc, UfuncEntry] = {}


def _ufunc_name(ufunc: np.ufunc) -> str:
    """``numpy.exp``, or ``scipy.special.erf`` for scipy's ufuncs (they also reach the tracer)."""
    name = ufunc.__name__
    if getattr(np, name, None) is ufunc:
        return f"numpy.{name}"
    import scipy.special

    if getattr(scipy.special, name, None) is ufunc:
        return f"scipy.special.{name}"
    return f"the ufunc {name}"


def public_name(func: Any) -> str:
    """``numpy.roll``-style name of a numpy callable."""
    if isinstance(func, np.ufunc):
        return _ufunc_name(func)
    mod = getattr(func, "__module__", None) or "numpy"
    if mod.startswith("numpy._core") or mod.startswith("numpy.core") or mod == "numpy":
        mod = "numpy"
    return f"{mod}.{getattr(func, '__name__', repr(func))}"


def register_function(
    *funcs: Any, family: str, via: str, note: str = ""
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorator: register ``handler`` as the traced version of each of ``funcs``."""

    def deco(handler: Callable[..., Any]) -> Callable[..., Any]:
        for f in funcs:
            FUNCTIONS[f] = Entry(public_name(f), family, handler, via, note)
            if getattr(f, "__module__", None) == "numpy.linalg":
                # numpy does not dispatch a list of traced values (or np.array([...]) of
                # traced scalars, an object array) to the tracer: its code is intercepted
                library.intercept(f)
        return handler

    return deco


def register_library(
    func: Any, *, name: str, family: str, via: str, note: str = "", always: bool = False,
    lift: bool = True,
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorator: register ``handler`` for a library function that converts its inputs.

    ``scipy.linalg.solve`` or ``scipy.special.logsumexp`` call ``np.asarray`` on their
    arguments, so numpy never hands them to the tracer; while a trace runs they are
    intercepted (:mod:`sparsejac.tracing.library`) and reach ``handler`` when given Tracers
    (or, with ``always``, whenever the traced function's code calls them). ``name`` is the
    public name shown in the table of supported functions; ``lift`` (the default) hands
    lists of traced values to ``handler`` as traced arrays.
    """

    def deco(handler: Callable[..., Any]) -> Callable[..., Any]:
        FUNCTIONS[func] = Entry(name, family, handler, via, note)
        library.intercept(func, always=always, lift=lift)
        return handler

    return deco


def register_through(func: Any, *, name: str, family: str, note: str = "") -> None:
    """Trace a pure-numpy library function through its own code (``scipy.integrate.simpson``).

    Such a function converts its arguments with ``np.asarray`` (so numpy never hands it to
    the tracer) and then computes with numpy only. While a trace runs it is intercepted
    (:mod:`sparsejac.tracing.library`) and, given Tracers, runs its own code with its numpy
    calls treated as the traced function's (:func:`~sparsejac.tracing.buffers.through_library`):
    the Jacobian is that of scipy's own arithmetic, and the trace's check compares the values.
    """
    from sparsejac.tracing.buffers import through_library

    def handler(*args: Any, **kwargs: Any) -> Any:
        with through_library():
            return library.own_code(func)(*args, **kwargs)

    FUNCTIONS[func] = Entry(name, family, handler, "its own numpy code, traced through", note)
    library.intercept(func)


def register_ufunc(
    ufunc: np.ufunc, method: str, handler: Callable[..., Any], *, family: str, via: str,
    note: str = "",
) -> None:
    """Register ``handler`` for ``ufunc.method`` (``"__call__"``, ``"reduce"``, ``"at"``...)."""
    entry = UFUNCS.setdefault(ufunc, UfuncEntry(ufunc))
    name = _ufunc_name(ufunc) + ("" if method == "__call__" else f".{method}")
    entry.methods[method] = Entry(name, family, handler, via, note)


def _refuse_complex(result: Any, name: str) -> Any:
    """Raise if a traced call produced complex values (not modelled yet: never folded away)."""
    for r in result if isinstance(result, tuple) else (result,):
        if isinstance(r, Tracer) and not r._var.is_const and r._var.dtype.kind == "c":
            raise UnsupportedPrimitiveError(
                name, "its complex result is not modelled (complex intermediates support the "
                "operations listed in docs/limitations.md), and dropping the imaginary part "
                "would give a wrong Jacobian; write the real and imaginary parts as separate "
                "real arrays", problem="produced complex values from traced inputs")
    return result


def dispatch_function(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """Route a numpy function call with Tracer arguments to its registered handler."""
    entry = FUNCTIONS.get(func)
    if entry is None:
        # numpy's `like=` dispatch looks the public function up by name: while a trace runs
        # that may be the buffer wrapper of sparsejac.tracing.buffers around the original
        if getattr(func, "sparsejac_buffer_wrapper", False):
            func = func.__wrapped__
        entry = FUNCTIONS.get(func)
    args = tuple(lift_objects(a) for a in args)
    if func not in _TAKES_SEQUENCES:
        args = tuple(_lift_scalars(a) for a in args)
        if any(isinstance(v, (list, tuple)) for v in kwargs.values()):
            kwargs = {k: _lift_scalars(v) for k, v in kwargs.items()}
    from sparsejac.primitives import complex_pairs

    if complex_pairs.involves_complex(args, kwargs):  # complex intermediates: real pairs
        return complex_pairs.pair_function(func, args, kwargs)
    if entry is None:
        return _on_constants(func, public_name(func), args, kwargs)
    out = kwargs.get("out")
    if out is not None and not isinstance(out, tuple):
        # computed, then written into `out` (a buffer made in f, or a slice of one) as numpy
        # does, and `out` returned: a rule need not know `out=` (one that ignored it left the
        # buffer unwritten: a silently zero Jacobian)
        kwargs = {k: v for k, v in kwargs.items() if k != "out"}
        res = _refuse_complex(entry.handler(*args, **kwargs), entry.name)
        if not isinstance(out, Tracer) and isinstance(res, Tracer) and not res._var.is_const:
            raise TracedConversionError(
                f"{entry.name}(..., out=...) writes a traced result into a plain numpy array, "
                "which would lose its dependence on x; drop `out=` or make the output inside "
                "f (np.zeros(shape), np.empty_like(x))."
            )
        if np.shape(res) != np.shape(out):
            raise ValueError(f"{entry.name}: `out` has shape {np.shape(out)}, but the result "
                             f"has shape {np.shape(res)}")
        out[...] = res
        return out
    return _refuse_complex(entry.handler(*args, **kwargs), entry.name)


def _on_constants(func: Any, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """A function without a rule, given traced arrays that are constants: numpy's result.

    Buffers made inside f (``np.zeros(n, bool)``, ``np.eye(n)``) are traced constants until
    a value depending on x is written into them; a function of constants alone
    (``np.flatnonzero(mask)``, ``np.fill_diagonal(a, 2)``) is the same constant at every x, so
    numpy computes it on their values (copies: what it writes into one is written back
    into the traced array, as numpy writes into its argument). Any argument that depends on
    x or a parameter: :class:`UnsupportedPrimitiveError` naming ``name``. A floating result
    is a traced constant again (a buffer f may fill), others plain (indices, masks).
    """
    found: list[tuple[Tracer, np.ndarray]] = []

    def plain(a: Any) -> Any:
        if isinstance(a, Tracer):
            if not a._var.is_const:
                raise UnsupportedPrimitiveError(name)
            value = np.array(a._var.value, copy=True)
            found.append((a, value))
            return value
        if type(a) in (list, tuple):
            return type(a)(plain(v) for v in a)
        return a

    new_args = tuple(plain(a) for a in args)
    new_kwargs = {k: plain(v) for k, v in kwargs.items()}
    result = func(*new_args, **new_kwargs)
    for tracer, value in found:  # written by numpy (np.fill_diagonal, np.copyto, out=)
        if value.tobytes() != np.asarray(tracer._var.value).tobytes():
            tracer[...] = value
    for part in result if isinstance(result, (tuple, list)) else (result,):
        for tracer, value in found:
            if part is value and not isinstance(result, (tuple, list)):
                return tracer  # numpy gave its argument back (np.asarray_chkfinite, require)
            if isinstance(part, np.ndarray) and np.shares_memory(part, value):
                raise UnsupportedPrimitiveError(
                    name, "it returns a view of an array made in f, which would not see "
                    "values written into that array later; copy it (np.copy) first")
    trace = current_trace()
    if isinstance(result, np.ndarray) and result.dtype.kind == "f" and trace is not None:
        return Tracer(trace, trace.const(result))
    return result


#: Functions whose list argument is a sequence of arrays (0-d ones too), not one array.
_TAKES_SEQUENCES = frozenset({
    np.stack, np.concatenate, np.concat, np.hstack, np.vstack, np.dstack, np.column_stack,
    np.block, np.atleast_1d, np.atleast_2d, np.atleast_3d, np.broadcast_arrays, np.meshgrid,
    np.ix_, np.einsum, np.linalg.multi_dot, np.choose, np.select, np.piecewise, np.lexsort})


def _lift_scalars(a: Any) -> Any:
    """A (nested) list of scalars holding traced ones as one traced array.

    ``[y[1], y[0], 2.0]`` is what numpy's ``asarray`` would make of it, had it values. Lists
    of arrays stay lists (``np.concatenate([a, b])`` takes a sequence).
    """
    if isinstance(a, (list, tuple)) and _holds_tracer(a) and _scalar_leaves(a):
        from sparsejac.primitives.creation import as_traced_array

        return as_traced_array(a)
    return a


def _scalar_leaves(a: Any) -> bool:
    if isinstance(a, (list, tuple)):
        return all(_scalar_leaves(v) for v in a)
    if isinstance(a, Tracer):
        return a.shape == ()
    return isinstance(a, (int, float, np.generic)) and not isinstance(a, (bool, np.bool_))


def _lift_array_like(a: Any) -> Any:
    """A ufunc operand given as a list holding traced values becomes one traced array."""
    if isinstance(a, (list, tuple)) and _holds_tracer(a):
        from sparsejac.primitives.creation import as_traced_array

        return as_traced_array(a)
    return a


def _holds_tracer(a: Any) -> bool:
    if isinstance(a, Tracer):
        return True
    return isinstance(a, (list, tuple)) and any(_holds_tracer(v) for v in a)


def dispatch_ufunc(
    ufunc: np.ufunc, method: str, inputs: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """Route a ufunc call (or method call) with Tracer arguments to its handler."""
    if method == "__call__" and not kwargs:  # the common case (a scalar loop's arithmetic):
        uentry = UFUNCS.get(ufunc)           # Tracers and real Python numbers only
        if uentry is not None and all(type(a) is Tracer or type(a) is float or type(a) is int
                                      for a in inputs):
            entry = uentry.methods.get(method)
            if entry is not None:
                return _refuse_complex(entry.handler(*inputs), entry.name)
    from sparsejac.primitives import complex_pairs

    if complex_pairs.involves_complex(inputs, kwargs):  # complex intermediates: real pairs
        return complex_pairs.pair_ufunc(ufunc, method, inputs, kwargs)
    uentry = UFUNCS.get(ufunc)
    entry = uentry.methods.get(method) if uentry is not None else None
    if entry is None:
        suffix = "" if method == "__call__" else f".{method}"
        call = ufunc if method == "__call__" else getattr(ufunc, method)
        return _on_constants(call, f"{_ufunc_name(ufunc)}{suffix}", inputs, kwargs)
    out = kwargs.pop("out", None)
    inputs = tuple(_lift_array_like(lift_objects(a)) for a in inputs)
    if method == "at":
        return entry.handler(*inputs, **kwargs)
    where = kwargs.pop("where", True) if method == "__call__" else True
    masked = not (where is True or (not isinstance(where, Tracer) and np.all(where)))
    if masked and out is None:
        raise UnsupportedPrimitiveError(
            entry.name, "`where=` without `out=` leaves the elements it masks out "
            "uninitialised; pass out= (an array made in f, np.zeros_like(...)) or write "
            "np.where(mask, expression, fallback)")
    if masked:  # computed everywhere, kept where selected (np.where's rule: nothing flows
        # from the masked-out values, even where they are inf or nan, as numpy never
        # computes them)
        with np.errstate(all="ignore"):
            result = _refuse_complex(entry.handler(*inputs, **kwargs), entry.name)
    else:
        result = _refuse_complex(entry.handler(*inputs, **kwargs), entry.name)
    if out is None:
        return result
    outs = out if isinstance(out, tuple) else (out,)
    results = result if isinstance(result, tuple) else (result,)
    if masked:
        results = tuple(np.where(where, r, o) for r, o in zip(results, outs, strict=True))
    for o, r in zip(outs, results, strict=True):
        if not isinstance(o, Tracer):
            raise TracedConversionError(
                f"numpy.{ufunc.__name__}(..., out=...) writes a traced result into a plain numpy "
                "array, which would lose its dependence on x; drop `out=` or create the output "
                "with np.empty_like(x) / np.zeros_like(x)."
            )
        o._rebind(r)
    # numpy hands ``out=`` over as a tuple, and returns the array itself for one output
    return outs[0] if len(outs) == 1 else outs


# ---------------------------------------------------------------------------------------
# binding primitives
# ---------------------------------------------------------------------------------------


def find_trace(args: Any) -> Trace:
    """The trace of the Tracers among ``args`` (searched one level into lists and tuples)."""
    found: Trace | None = None
    flat: list[Any] = []
    for a in args if isinstance(args, (list, tuple)) else [args]:
        flat.extend(a if isinstance(a, (list, tuple)) else [a])
    for a in flat:
        if isinstance(a, Tracer):
            if found is None:
                found = a._trace
            elif a._trace is not found:
                raise ValueError("arrays from two different traces were combined")
    if found is None:
        found = current_trace()
    if found is None:  # pragma: no cover - handlers are only reached with a Tracer argument
        raise RuntimeError("no trace is being recorded")
    return found


def as_var(trace: Trace, a: Any) -> Var:
    """The variable for a Tracer, or a constant variable for anything else."""
    if isinstance(a, Tracer):
        if a._trace is not trace:
            raise ValueError("arrays from two different traces were combined")
        return a._var
    return trace.const(a)


def bind(prim: Primitive, args: Sequence[Any], params: dict[str, Any] | None = None,
         value: Any = None) -> Tracer:
    """Apply ``prim`` to ``args`` (Tracers or constants) and return the traced result.

    ``value`` may be given when the handler already computed the result with numpy (it is
    then exactly numpy's answer); otherwise ``prim.impl`` computes it.
    """
    params = params or {}
    for a in args:  # the trace of the first Tracer (as_var checks that the others share it)
        if type(a) is Tracer:
            trace = a._trace
            break
    else:
        trace = find_trace(args)
    trace.ensure_open()  # (a traced array f kept from an ended trace has no value left)
    in_vars = tuple([as_var(trace, a) for a in args])
    if value is None:
        value = prim.impl(*(v.value for v in in_vars), **params)
    return Tracer(trace, trace.emit(prim, in_vars, params, value))


def floats(value: Any) -> np.ndarray:
    """``value`` as a float64 array; a Tracer stays traced (a rule evaluated on traced values).

    Rules that compute local derivative values from the primal values use it instead of
    ``np.asarray``, so that the same formula also runs inside a recorded reverse sweep
    (second order, :mod:`sparsejac.ad.second_order`).
    """
    if isinstance(value, Tracer):
        return cast(np.ndarray, value)  # it behaves as one
    return np.asarray(value, dtype=np.float64)


def contiguous(value: Any) -> np.ndarray:
    """``np.ascontiguousarray(value, float64)``; a Tracer stays traced (see :func:`floats`)."""
    if isinstance(value, Tracer):
        return cast(np.ndarray, value)
    return np.ascontiguousarray(value, dtype=np.float64)


def wrap_const(trace: Trace, value: Any) -> Tracer:
    """A constant Tracer (it can still be assigned into, which a plain array could not)."""
    return Tracer(trace, trace.const(np.asarray(value)))
