"""The Tracer: an ndarray stand-in that records every numpy call made on it.

numpy hands a call to :meth:`Tracer.__array_ufunc__` (ufuncs and their methods such as
``np.add.at``) or :meth:`Tracer.__array_function__` (everything else, e.g. ``np.roll``)
whenever a Tracer is among the arguments. Both look the call up in the primitive registry
(:mod:`sparsejac.primitives.core`); an unknown call raises
:class:`~sparsejac.errors.UnsupportedPrimitiveError`, never a guess.

Conversions to plain Python values are where tracing meets Python control flow:

* ``bool()``, ``int()``, ``operator.index()`` have zero derivative: local mode answers from
  the value at the trace point (the program is value-dependent), global mode refuses
  (:class:`~sparsejac.errors.ConcretizationError`) but for a guard ``if r == 0:`` off its tie;
* ``float()``, ``complex()``, ``.item()``, ``.tolist()``, ``np.asarray()`` would drop the
  derivative, so they are refused for any value that depends on ``x``.
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from sparsejac.errors import (
    ConcretizationError,
    TracedConversionError,
    UnsupportedPrimitiveError,
)
from sparsejac.tracing.callers import (
    array_conversion_message,
    library_caller,
    library_message,
    user_line,
)
from sparsejac.tracing.hooks import registry
from sparsejac.tracing.keys import basic_positions, fancy_positions, is_basic_key
from sparsejac.tracing.operands import defers as _defers
from sparsejac.tracing.operands import lift_objects
from sparsejac.tracing.program import CONST, FROM_PARAMS, Trace, Var

__all__ = ["Tracer", "concretize"]

_GLOBAL_HINT = (
    "A global sparsity pattern must hold for every x, so it cannot follow a branch chosen by "
    "the values. Use np.where / np.maximum / np.clip for value-dependent choices, or ask for "
    "a pattern valid at this x only with local=True."
)


class Tracer:
    """Array-like stand-in for an intermediate value of the traced function.

    Users never build one: the entry points pass a Tracer to ``f`` in place of ``x``. It
    supports numpy's operators, methods and the functions of ``docs/supported.md``; ``f`` is
    then called with ``x`` itself (:func:`~sparsejac.tracing.check_traced_value`).

    Examples
    --------
    >>> import numpy as np
    >>> import sparsejac
    >>> def f(x):
    ...     print(type(x).__name__, x.shape)
    ...     return x ** 2
    >>> sparsejac.jacobian_sparsity(f, np.ones(3)).nnz
    Tracer (3,)
    ndarray (3,)
    3
    """

    __slots__ = ("__weakref__", "_base", "_pending", "_trace", "_v", "_views")
    __array_priority__ = 1000.0

    def __init__(self, trace: Trace, var: Var) -> None:
        self._trace = trace
        self._v = var
        #: element writes ``{flat: Var or number}`` not yet recorded (see :meth:`__setitem__`)
        self._pending: dict[int, Any] | None = None
        # numpy view aliasing (see sparsejac.primitives.views): (base, index, writeable)
        self._base: tuple[Tracer, Any, bool] | None = None
        self._views: list[Any] | None = None

    @property
    def _var(self) -> Var:
        """The variable this tracer stands for (pending element writes merged first)."""
        if self._pending:
            self._v = registry().merge_writes(self._trace, self._v, self._pending)
            self._pending = None
        return self._v

    @_var.setter
    def _var(self, var: Var) -> None:
        self._v = var
        self._pending = None

    def _flat_position(self, key: Any) -> int | None:
        """The C-order position of a key of one integer per axis (``x[i]``, ``x[i, j]``).

        None for any other key (or out of bounds: the general path, numpy's error).
        """
        keys = key if isinstance(key, tuple) else (key,)
        shape = self._v.shape
        if len(keys) != len(shape):
            return None
        flat = 0
        for k, n in zip(keys, shape, strict=True):
            if type(k) is not int and not (isinstance(k, np.integer)):
                return None
            i = int(k)
            if i < 0:
                i += n
            if not 0 <= i < n:
                return None
            flat = flat * n + i
        return flat

    # -- array attributes (pending element writes change neither: no merge) ----------------

    @property
    def shape(self) -> tuple[int, ...]:
        """Shape of the traced array."""
        return self._v.shape

    @shape.setter
    def shape(self, value: Any) -> None:
        raise UnsupportedPrimitiveError("ndarray.shape assignment", "reshaping in place", problem=
                                        "is not supported: write `a = a.reshape(shape)`") from None

    @property
    def dtype(self) -> np.dtype[Any]:
        """Dtype of the traced array."""
        return self._v.dtype

    @property
    def ndim(self) -> int:
        """Number of dimensions."""
        return len(self._v.shape)

    @property
    def size(self) -> int:
        """Number of elements."""
        return self._v.size

    @property
    def T(self) -> Tracer:
        """Transpose (reversed axes), as ``ndarray.T``."""
        return np.transpose(self)  # type: ignore[return-value]

    @property
    def mT(self) -> Tracer:
        """Transpose of the last two axes, as ``ndarray.mT``."""
        return np.swapaxes(self, -1, -2)  # type: ignore[return-value]

    @property
    def real(self) -> Tracer:
        """Real part: for a real dtype a view of the array, as in numpy (it writes through)."""
        if self.dtype.kind != "c":
            return self[...]  # type: ignore[no-any-return]
        return np.real(self)

    @property
    def imag(self) -> Any:
        """Imaginary part: ``np.imag`` (zeros for a real dtype, as numpy's)."""
        return np.imag(self)

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    def __iter__(self) -> Any:
        if not self.shape:
            raise TypeError("iteration over a 0-d array")
        return (self._var.value[i] if self._var.is_const and self.ndim == 1 else self[i]
                for i in range(self.shape[0]))  # numpy's scalars while 1-D and constant

    def __repr__(self) -> str:
        kind = "active" if self._var.active else ("constant" if self._var.is_const else "inactive")
        return f"Tracer(shape={self.shape}, dtype={self.dtype}, {kind})"

    def __array_ufunc__(self, ufunc: np.ufunc, method: str, *inputs: Any, **kwargs: Any) -> Any:
        return registry().ufunc(ufunc, method, inputs, kwargs)

    def __array_namespace__(self, api_version: str | None = None) -> Any:
        """numpy: array-API code (scipy's ``array_api_compat`` helpers) calls numpy on it."""
        return np

    def __array_function__(self, func: Any, types: Any, args: tuple[Any, ...],
                           kwargs: dict[str, Any]) -> Any:
        return registry().function(func, args, kwargs)

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        if self._var.is_const:
            return np.asarray(self._var.value, dtype=dtype)
        if self._var.sources == FROM_PARAMS:  # a library function of t: exact at this t
            return np.asarray(self._concrete_zero_derivative("np.asarray()"), dtype=dtype)
        site = library_caller()
        if site is not None:
            raise TracedConversionError(library_message(site))
        if self._var.dtype.kind in "biu" and dtype is None:
            # integers or booleans (table[i] of a plain table, i from np.searchsorted) have
            # zero derivative: their value, read (local mode only), as int() gives it
            return np.asarray(self._concrete_zero_derivative("use as an index or integer"))
        if self._var.shape == () and dtype is None and copy is not False:
            # np.array([a, b]) of traced scalars: numpy builds an object array holding the
            # Tracers; numpy's object loops keep them traced, and the array is lifted back to
            # a traced array where it meets a traced call or is returned (lift_objects)
            box = np.empty((), dtype=object)
            box[()] = self
            return box
        if self._var.shape == () and dtype is not None:
            raise TracedConversionError(
                f"a traced scalar was converted to a plain numpy array of dtype {dtype}"
                f"{user_line()} (as np.float64(s) does: write s.astype(np.float64); or a "
                "numpy function given a list of traced values, np.mean([a, b]); assignment "
                "into a plain array made outside f; `zeros(n)` after `from numpy import zeros` "
                "in a module the tracer does not reach from f: write np.zeros). That would "
                "lose its dependence on x. Drop `dtype=`, pass np.stack([a, b]) instead of a "
                "list (np.array([a, b]) in f is traced too), "
                "and create output arrays inside f (np.zeros(n), np.empty(n) there are "
                "traceable) or from x: out = np.zeros_like(x), np.empty_like(x), or "
                "np.zeros(shape, like=x).")
        raise TracedConversionError(array_conversion_message(self.shape, self.dtype))

    def _concrete_zero_derivative(self, what: str) -> np.ndarray:
        """Value for an operation whose result has zero derivative (bool, int, index)."""
        var = self._var
        if var.is_const:
            return var.value
        if var.sources == FROM_PARAMS:  # `if t < 1:`, the same for every x (ParamGuards)
            self._trace.read_param(var, what)
            return var.value
        if not self._trace.local:
            if var.generic and what == "bool()":  # if r == 0: false here, and near x
                return var.value
            raise ConcretizationError(f"{what} of a traced array{user_line()}: {_GLOBAL_HINT}")
        if var.tied:
            raise ConcretizationError(
                f"{what} of an equality of a value depending on x and a constant{user_line()}, "
                "which holds at this x only: the branch tells nothing of f's derivatives (a "
                "cache keyed on x hit here, a special case at a value); differentiate f "
                "without the cache, or at another point")
        self._trace.mark_value_dependent(what)
        return var.value

    def _concrete_value(self, what: str) -> np.ndarray:
        """Value for a conversion that would drop the derivative (float, item, tolist)."""
        var = self._var
        if var.is_const:
            return var.value
        if var.active:
            site = library_caller()
            if site is not None:
                raise TracedConversionError(library_message(site))
            raise TracedConversionError(
                f"{what} of a traced array that depends on x{user_line()} would drop that "
                "dependence (math.exp, math.sin ... call float(): use np.exp, np.sin). numpy "
                "also calls float() to store a traced element into a plain array: one made "
                "outside f (a global out), a copy of one (k.copy(), k * 1.0), or zeros(n) "
                "after `from numpy import zeros` where f does not reach; create such arrays "
                "inside f with np.zeros(n), np.copy(k), np.array(k, like=x) (traceable) or from "
                "x: out = np.zeros_like(x), np.empty_like(x), or np.zeros(shape, like=x). Keep "
                "the computation in numpy (e.g. y[0] instead of float(y[0])), or, for code "
                "that cannot be, pass `sparsity=` and use mode='fd' (finite differences)."
            )
        return self._concrete_zero_derivative(what)

    def __bool__(self) -> bool:
        return bool(self._concrete_zero_derivative("bool()"))

    def __hash__(self) -> int:
        # like numpy: an array is unhashable (its == is elementwise), a scalar hashes its
        # value (a dict key or set member: a branch on the value, as bool())
        if self.ndim:
            raise TypeError("unhashable type: 'numpy.ndarray'")
        return hash(self._concrete_zero_derivative("hash() (a dict key or set member)").item())

    def __int__(self) -> int:
        return int(self._concrete_zero_derivative("int()"))

    def __index__(self) -> int:
        v = self._concrete_zero_derivative("use as an index (operator.index)")
        return v.__index__()

    def __float__(self) -> float:
        return float(self._concrete_value("float()"))

    def __complex__(self) -> complex:
        return complex(self._concrete_value("complex()"))

    def __format__(self, spec: str) -> str:
        if not spec:
            return str(self)
        return format(self._concrete_value(f"format() with {spec!r}"), spec)

    def __round__(self, ndigits: int | None = None) -> Any:
        if ndigits is None:  # round(y): a Python int, as int()
            return int(np.rint(self))
        if self._var.sources == FROM_PARAMS and self.ndim == 0:  # round(t, 1): Python's digits
            return round(float(self._concrete_zero_derivative(f"round(, {int(ndigits)})")), ndigits)
        return np.round(self, ndigits)  # a traced array (zero derivative almost everywhere)

    def item(self, *args: Any) -> Any:
        """Refused for values that depend on ``x`` (see :class:`TracedConversionError`)."""
        return self._concrete_value(".item()").item(*args)

    def tolist(self) -> Any:
        """Refused for values that depend on ``x`` (see :class:`TracedConversionError`)."""
        return self._concrete_value(".tolist()").tolist()

    def tobytes(self, order: str = "C") -> bytes:
        """As :meth:`tolist` (a cache key made of ``f``'s argument reads all its values)."""
        return bytes(self._concrete_value(".tobytes()").tobytes(order))  # type: ignore[arg-type]

    # -- indexing --------------------------------------------------------------------------

    def __getitem__(self, key: Any) -> Any:
        flat = self._flat_position(key)
        if flat is not None:  # one element: a scalar loop's read
            item = (self._pending or {}).get(flat)
            if type(item) is tuple:  # (element j of a block written at once)
                return registry().element(self._trace, *item)
            if item is not None:
                return Tracer(self._trace, item if isinstance(item, Var)
                              else self._trace.const(np.asarray(item)))
            return registry().element(self._trace, self._v, flat)
        if self._pending and (at := fancy_positions(self._v.shape, key)) is not None:
            return registry().read_writes(self._trace, self._v, self._pending, at)  # (R[t])
        return registry().getitem(self, key)

    def __setitem__(self, key: Any, value: Any) -> None:
        if self._is_own_view_at(key, value):
            return  # `y[k] = v` with v the view y[k]: the ending of `y[k] += ...`, a no-op
        if self._base is None and not self._views:
            at: Any = self._flat_position(key)
            if at is None and isinstance(value, Tracer) and 0 < value.size <= 64 and \
                    self._v.value.flags.c_contiguous:  # a small block: x[2 * k:2 * k + 2] = v
                at = (basic_positions if is_basic_key(key) else fancy_positions)(self.shape, key)
            if at is not None and self._write_element(at, value):
                return
        value = lift_objects(value)
        self._rebind(registry().setitem(self, key, value))

    def _is_own_view_at(self, key: Any, value: Any) -> bool:
        """Whether ``value`` is a live view of this array at exactly the positions ``key``.

        Views are re-read whenever their base changes, so writing one back where it sits
        changes nothing: Python ends ``y[1:] += d`` with ``y[1:] = <the updated view>``.
        """
        if not (isinstance(value, Tracer) and value._base is not None
                and value._base[0] is self and value.shape != ()):
            return False
        at = basic_positions(self.shape, key)
        return at is not None and at.shape == value.shape and bool(
            np.array_equal(at.reshape(-1), value._base[1]()))

    def _write_element(self, flat: Any, value: Any) -> bool:
        """Keep ``x[flat] = v`` (an element, or a small block) pending until a whole read."""
        dtype = self._v.dtype
        if dtype.kind != "f":
            return False
        if isinstance(value, Tracer):
            if value._trace is not self._trace:
                return False
            var = value._var
            if var.shape != np.shape(flat) or var.dtype != dtype:
                return False
            if np.ndim(flat):  # each position: (the block, the element's index in it)
                self._pending = self._pending or {}
                self._pending.update({p: (var, j) for j, p in enumerate(flat.ravel().tolist())})
                return True
            item: Any = np.asarray(var.value) if var.is_const else var
        elif type(value) in (float, int) or (isinstance(value, (np.floating, np.integer))
                                             and not isinstance(value, np.bool_)):
            item = dtype.type(value)
        else:
            return False
        self._pending = self._pending or {}
        self._pending[int(flat)] = item  # (an int, or a block's one position)
        return True

    def _rebind(self, other: Any) -> Tracer:
        """Make this tracer stand for ``other`` (in-place update: ``y += 1``, ``y[i] = v``).

        The update reaches the traced arrays it is a view of, and its views, as numpy's does.
        """
        if self._base is not None:
            registry().check_writeable(self)
        if not isinstance(other, Tracer):
            other = self._trace_const(other)
        if other.shape != self.shape:
            raise ValueError(f"in-place update would change the shape from {self.shape} to "
                             f"{other.shape}")
        if other.dtype != self.dtype:
            if not np.can_cast(other.dtype, self.dtype, casting="same_kind"):
                raise TypeError(f"cannot store a result of dtype {other.dtype} in place into a "
                                f"traced array of dtype {self.dtype} (numpy's same_kind "
                                "casting rule)")
            other = other.astype(self.dtype)
        self._var = other._var
        if self._base is not None or self._views:
            registry().sync(self)
        return self

    def _trace_const(self, value: Any) -> Tracer:
        return Tracer(self._trace, self._trace.const(value))

    # -- methods (each forwards to the numpy function, hence to the registry) ---------------

    def reshape(self, *shape: Any, order: str = "C") -> Any:
        """As :meth:`numpy.ndarray.reshape`."""
        if len(shape) == 1 and (isinstance(shape[0], (tuple, list)) or np.ndim(shape[0]) == 1):
            shape = tuple(operator.index(s) for s in shape[0])  # (an int array: numpy's too)
        return np.reshape(self, shape, order=order)  # type: ignore[call-overload]

    def ravel(self, order: str = "C") -> Any:
        """As :meth:`numpy.ndarray.ravel`."""
        return np.ravel(self, order=order)  # type: ignore[call-overload]

    def flatten(self, order: str = "C") -> Any:
        """As :meth:`numpy.ndarray.flatten` (a copy, never a view)."""
        return np.copy(np.ravel(self, order=order))  # type: ignore[call-overload]

    def transpose(self, *axes: Any) -> Any:
        """As :meth:`numpy.ndarray.transpose`."""
        if len(axes) == 1 and not isinstance(axes[0], (int, np.integer)):  # None, a sequence
            if axes[0] is None:
                return np.transpose(self)
            return np.transpose(self, tuple(axes[0]))  # (a range: scipy's coo u @ L; () too)
        return np.transpose(self, axes or None)

    def swapaxes(self, axis1: int, axis2: int) -> Any:
        """As :meth:`numpy.ndarray.swapaxes`."""
        return np.swapaxes(self, axis1, axis2)

    def squeeze(self, axis: Any = None) -> Any:
        """As :meth:`numpy.ndarray.squeeze`."""
        return np.squeeze(self, axis=axis)

    def repeat(self, repeats: Any, axis: Any = None) -> Any:
        """As :meth:`numpy.ndarray.repeat`."""
        return np.repeat(self, repeats, axis=axis)

    def take(self, indices: Any, axis: Any = None, mode: str = "raise") -> Any:
        """As :meth:`numpy.ndarray.take`."""
        return np.take(self, indices, axis=axis, mode=mode)  # type: ignore[call-overload]

    def diagonal(self, offset: int = 0, axis1: int = 0, axis2: int = 1) -> Any:
        """As :meth:`numpy.ndarray.diagonal`."""
        return np.diagonal(self, offset, axis1, axis2)

    def sum(self, axis: Any = None, dtype: Any = None, out: Any = None, keepdims: bool = False,
            **kw: Any) -> Any:
        """As :meth:`numpy.ndarray.sum`."""
        return np.sum(self, axis=axis, dtype=dtype, out=out, keepdims=keepdims, **kw)

    def prod(self, axis: Any = None, dtype: Any = None, out: Any = None, keepdims: bool = False,
             **kw: Any) -> Any:
        """As :meth:`numpy.ndarray.prod`."""
        return np.prod(self, axis=axis, dtype=dtype, out=out, keepdims=keepdims, **kw)

    def mean(self, axis: Any = None, dtype: Any = None, out: Any = None, keepdims: bool = False,
             **kw: Any) -> Any:
        """As :meth:`numpy.ndarray.mean`."""
        return np.mean(self, axis=axis, dtype=dtype, out=out, keepdims=keepdims, **kw)

    def max(self, axis: Any = None, out: Any = None, keepdims: bool = False, **kw: Any) -> Any:
        """As :meth:`numpy.ndarray.max`."""
        return np.max(self, axis=axis, out=out, keepdims=keepdims, **kw)

    def min(self, axis: Any = None, out: Any = None, keepdims: bool = False, **kw: Any) -> Any:
        """As :meth:`numpy.ndarray.min`."""
        return np.min(self, axis=axis, out=out, keepdims=keepdims, **kw)

    def cumsum(self, axis: Any = None, dtype: Any = None, out: Any = None) -> Any:
        """As :meth:`numpy.ndarray.cumsum`."""
        return np.cumsum(self, axis=axis, dtype=dtype, out=out)

    def cumprod(self, axis: Any = None, dtype: Any = None, out: Any = None) -> Any:
        """As :meth:`numpy.ndarray.cumprod`."""
        return np.cumprod(self, axis=axis, dtype=dtype, out=out)

    def all(self, axis: Any = None, out: Any = None, keepdims: bool = False) -> Any:
        """As :meth:`numpy.ndarray.all`."""
        return np.all(self, axis=axis, out=out, keepdims=keepdims)

    def any(self, axis: Any = None, out: Any = None, keepdims: bool = False) -> Any:
        """As :meth:`numpy.ndarray.any`."""
        return np.any(self, axis=axis, out=out, keepdims=keepdims)

    def argmax(self, axis: Any = None, out: Any = None, keepdims: bool = False) -> Any:
        """As :meth:`numpy.ndarray.argmax`."""
        return np.argmax(self, axis=axis, out=out, keepdims=keepdims)

    def argmin(self, axis: Any = None, out: Any = None, keepdims: bool = False) -> Any:
        """As :meth:`numpy.ndarray.argmin`."""
        return np.argmin(self, axis=axis, out=out, keepdims=keepdims)

    def dot(self, b: Any, out: Any = None) -> Any:
        """As :meth:`numpy.ndarray.dot`."""
        return np.dot(self, b, out=out)

    def clip(self, min: Any = None, max: Any = None, out: Any = None, **kw: Any) -> Any:
        """As :meth:`numpy.ndarray.clip`."""
        return np.clip(self, min, max, out=out, **kw)

    def conj(self) -> Any:
        """As :meth:`numpy.ndarray.conj`."""
        return np.conjugate(self)
    conjugate = conj

    def round(self, decimals: int = 0, out: Any = None) -> Any:
        """As :meth:`numpy.ndarray.round`."""
        return np.round(self, decimals, out=out)

    def copy(self, order: str = "C") -> Any:
        """As :meth:`numpy.ndarray.copy`: a traced copy, in ``order``'s memory layout.

        The layout matters to ``ravel(order="K")`` and ``reshape(..., order="A")`` after it.
        """
        np_copy: Any = np.copy  # (numpy's overloads want a literal order)
        return np_copy(self, order=order)

    def __deepcopy__(self, memo: Any = None) -> Any:  # copy.copy, copy.deepcopy: numpy's copy
        return np.copy(self)
    __copy__ = __deepcopy__

    def __reduce_ex__(self, protocol: Any) -> Any:  # pickle.dumps(y) in f
        raise TracedConversionError(array_conversion_message(self.shape, self.dtype, True))

    def astype(self, dtype: Any, order: str = "K", casting: str = "unsafe", subok: bool = True,
               copy: bool = True) -> Any:
        """As :meth:`numpy.ndarray.astype` (``order`` sets the result's memory layout).

        ``copy=False`` to the same dtype gives the array itself, as numpy does (writes through
        the result reach it).
        """
        if not copy and np.dtype(dtype) == self.dtype:
            value = self._var.value
            if order in ("K", "A") or (isinstance(value, np.ndarray) and (
                    value.flags.c_contiguous if order == "C" else value.flags.f_contiguous)):
                return self
        res = registry().astype(self, dtype)
        np_copy: Any = np.copy
        return res if order in ("K", "A") else np_copy(res, order=order)

    def fill(self, value: Any) -> None:
        """As :meth:`numpy.ndarray.fill`: set every element."""
        self[...] = value

    def std(self, axis: Any = None, dtype: Any = None, out: Any = None, ddof: float = 0,
            keepdims: bool = False, **kw: Any) -> Any:
        """As :meth:`numpy.ndarray.std`."""
        return np.std(self, axis=axis, dtype=dtype, out=out, ddof=ddof, keepdims=keepdims, **kw)

    def var(self, axis: Any = None, dtype: Any = None, out: Any = None, ddof: float = 0,
            keepdims: bool = False, **kw: Any) -> Any:
        """As :meth:`numpy.ndarray.var`."""
        return np.var(self, axis=axis, dtype=dtype, out=out, ddof=ddof, keepdims=keepdims, **kw)

    def trace(self, offset: int = 0, axis1: int = 0, axis2: int = 1, dtype: Any = None,
              out: Any = None) -> Any:
        """As :meth:`numpy.ndarray.trace`."""
        return np.trace(self, offset, axis1, axis2, dtype, out)

    # the ndarray methods whose numpy function takes other arguments first, or works in
    # place; the plain forwarders are generated below (FORWARDED_METHODS)
    def sort(self, *args: Any, **kwargs: Any) -> None:
        """As :meth:`numpy.ndarray.sort`: in place, through :func:`numpy.sort`."""
        self[...] = np.sort(self, *args, **kwargs)

    def partition(self, kth: Any, *args: Any, **kwargs: Any) -> None:
        """As :meth:`numpy.ndarray.partition`: in place, through :func:`numpy.partition`."""
        self[...] = np.partition(self, kth, *args, **kwargs)

    def compress(self, condition: Any, *args: Any, **kwargs: Any) -> Any:
        """As :meth:`numpy.ndarray.compress` (forwards to :func:`numpy.compress`)."""
        return np.compress(condition, self, *args, **kwargs)

    def resize(self, *args: Any, **kwargs: Any) -> Any:
        """As :meth:`numpy.ndarray.resize`: in place, which a traced array cannot do."""
        raise UnsupportedPrimitiveError(
            "numpy.ndarray.resize", "it resizes in place; use np.resize(x, shape) or "
            "np.concatenate / np.pad to build a new array")

    def __getattr__(self, name: str) -> Any:
        # only reached when the attribute is not defined above: an ndarray attribute the
        # tracer does not model (flat, strides, view, tofile, ...) gets a message that says
        # so, still as an AttributeError, so that hasattr() and getattr(..., default) work
        if not name.startswith("_") and hasattr(np.ndarray, name):
            raise AttributeError(
                f"ndarray.{name} is not supported on a traced array (sparsejac follows the "
                "numpy functions and ndarray methods listed in docs/supported.md); rewrite "
                "the expression with supported ones, or pass `sparsity=` and use mode='fd' "
                "for a black-box function", name=name, obj=self)
        raise AttributeError(
            f"{type(self).__name__!r} object has no attribute {name!r}", name=name, obj=self)

    # -- operators -------------------------------------------------------------------------

    def __neg__(self) -> Any:
        return np.negative(self)

    def __pos__(self) -> Any:
        return np.positive(self)

    def __abs__(self) -> Any:
        return np.absolute(self)

    def __invert__(self) -> Any:
        return np.invert(self)

    def __add__(self, o: Any) -> Any:
        if _defers(o):
            return NotImplemented
        return np.add(self, o)

    def __radd__(self, o: Any) -> Any:
        return np.add(o, self)

    def __sub__(self, o: Any) -> Any:
        if _defers(o):
            return NotImplemented
        return np.subtract(self, o)

    def __rsub__(self, o: Any) -> Any:
        return np.subtract(o, self)

    def __mul__(self, o: Any) -> Any:
        if _defers(o):
            return NotImplemented
        return np.multiply(self, o)

    def __rmul__(self, o: Any) -> Any:
        return np.multiply(o, self)

    def __truediv__(self, o: Any) -> Any:
        if _defers(o):
            return NotImplemented
        return np.true_divide(self, o)

    def __rtruediv__(self, o: Any) -> Any:
        return np.true_divide(o, self)

    def __floordiv__(self, o: Any) -> Any:
        return np.floor_divide(self, o)

    def __rfloordiv__(self, o: Any) -> Any:
        return np.floor_divide(o, self)

    def __mod__(self, o: Any) -> Any:
        return np.remainder(self, o)

    def __rmod__(self, o: Any) -> Any:
        return np.remainder(o, self)

    def __pow__(self, o: Any) -> Any:
        return np.power(self, o)

    def __rpow__(self, o: Any) -> Any:
        return np.power(o, self)

    def __matmul__(self, o: Any) -> Any:
        if _defers(o):
            return NotImplemented
        return np.matmul(self, o)

    def __rmatmul__(self, o: Any) -> Any:
        return np.matmul(o, self)

    def __and__(self, o: Any) -> Any:
        return np.bitwise_and(self, o)

    def __rand__(self, o: Any) -> Any:
        return np.bitwise_and(o, self)

    def __or__(self, o: Any) -> Any:
        return np.bitwise_or(self, o)

    def __ror__(self, o: Any) -> Any:
        return np.bitwise_or(o, self)

    def __xor__(self, o: Any) -> Any:
        return np.bitwise_xor(self, o)

    def __rxor__(self, o: Any) -> Any:
        return np.bitwise_xor(o, self)

    def __lt__(self, o: Any) -> Any:
        return np.less(self, o)

    def __le__(self, o: Any) -> Any:
        return np.less_equal(self, o)

    def __gt__(self, o: Any) -> Any:
        return np.greater(self, o)

    def __ge__(self, o: Any) -> Any:
        return np.greater_equal(self, o)

    def __eq__(self, o: Any) -> Any:
        return np.equal(self, o)

    def __ne__(self, o: Any) -> Any:
        return np.not_equal(self, o)

    def __divmod__(self, o: Any) -> Any:
        return np.floor_divide(self, o), np.remainder(self, o)

    def __rdivmod__(self, o: Any) -> Any:
        return np.floor_divide(o, self), np.remainder(o, self)

    # in-place operators rebind this tracer to the result (numpy's in-place semantics; views
    # of it and the arrays it is a view of are updated too, see sparsejac.primitives.views)
    def __iadd__(self, o: Any) -> Tracer:
        return self._rebind(np.add(self, o))

    def __isub__(self, o: Any) -> Tracer:
        return self._rebind(np.subtract(self, o))

    def __imul__(self, o: Any) -> Tracer:
        return self._rebind(np.multiply(self, o))

    def __itruediv__(self, o: Any) -> Tracer:
        return self._rebind(np.true_divide(self, o))

    def __ipow__(self, o: Any) -> Tracer:
        return self._rebind(np.power(self, o))

    def __imatmul__(self, o: Any) -> Tracer:
        return self._rebind(np.matmul(self, o))

    def __ifloordiv__(self, o: Any) -> Tracer:
        return self._rebind(np.floor_divide(self, o))

    def __imod__(self, o: Any) -> Tracer:
        return self._rebind(np.remainder(self, o))


#: Ufuncs whose object-dtype loop calls a method of that name on each element
#: (``np.sin(a)`` with ``a = np.array([y0, y1])`` of traced scalars calls ``y0.sin()``).
OBJECT_LOOP_UFUNCS = (
    "sin", "cos", "tan", "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh", "arcsinh",
    "arccosh", "arctanh", "exp", "expm1", "exp2", "log", "log2", "log10", "log1p", "sqrt",
    "cbrt", "square", "reciprocal", "absolute", "fabs", "sign", "floor", "ceil", "rint",
    "trunc", "negative", "positive", "deg2rad", "rad2deg", "degrees", "radians",
    "arctan2", "hypot", "fmod", "logical_xor")  # binary: a_i.arctan2(b_i)


#: ndarray methods that are the numpy function of the same name (``x.argsort()``): supported
#: exactly when it is, else failing with its UnsupportedPrimitiveError.
FORWARDED_METHODS = ("argsort", "argpartition", "nonzero", "searchsorted", "choose", "put")


def _forwarding_method(name: str, doc: str) -> Any:
    func = getattr(np, name)

    def method(self: Tracer, *args: Any, **kwargs: Any) -> Any:
        return func(self, *args, **kwargs)

    method.__name__ = method.__qualname__ = name
    method.__doc__ = doc.format(name=name)
    return method


for _name in OBJECT_LOOP_UFUNCS:
    setattr(Tracer, _name, _forwarding_method(
        _name, "``numpy.{name}(self)``: what numpy's object-dtype loop calls."))
for _name in FORWARDED_METHODS:
    setattr(Tracer, _name, _forwarding_method(
        _name, "As :meth:`numpy.ndarray.{name}` (forwards to :func:`numpy.{name}`)."))


def concretize(obj: Any, what: str) -> Any:
    """Plain value of ``obj`` for a use that needs one (an index array, a shape).

    Constants and non-tracers pass through. An inactive traced value (integers, booleans,
    results of zero-derivative operations: an index, a mask, a shift) is allowed in local mode
    only, and marks the program value-dependent. An *active* value (one with a derivative
    with respect to ``x``) is always refused: treating it as a constant would silently drop
    its derivative.
    """
    if isinstance(obj, Tracer):
        var = obj._var
        if var.kind == CONST:
            return var.value
        if var.active:
            raise TracedConversionError(
                f"{what} depends on x with a nonzero derivative{user_line()}, but it is used as a "
                "constant (sparsejac cannot differentiate through this argument). Keep traced "
                "values in the arguments sparsejac differentiates, or compute this argument "
                "from constants.")
        if not obj._trace.local:
            raise ConcretizationError(f"{what} depends on traced values{user_line()}: "
                                      + _GLOBAL_HINT)
        obj._trace.mark_value_dependent(what)
        return var.value
    if isinstance(obj, (list, tuple)) and any(isinstance(o, Tracer) for o in obj):
        return type(obj)(concretize(o, what) for o in obj)
    return obj
