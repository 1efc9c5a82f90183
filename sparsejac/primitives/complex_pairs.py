"""Complex intermediates as pairs of real traced arrays.

A complex value met while tracing (``1j * x``, ``np.exp(1j * k * x)``, ``np.fft.fft(x)``) is a
:class:`ComplexPair`: its real and imaginary parts, each a real Tracer, a real constant or
``None`` (identically zero). Every operation on it is written with real operations on the
parts, so derivatives with respect to the real ``x`` are the ordinary real ones, including for
the functions that are not holomorphic (``abs``, ``conj``, ``angle``, ``.real``, ``.imag``):
nothing in detection or differentiation knows about complex numbers.

Supported: ``+ - * /`` and ``negative``, ``==`` and ``!=`` (both parts compared), ``conj``,
``exp``, ``sin``/``cos``/``sinh``/``cosh``, ``** k`` for an integer ``|k| <= 16``,
``np.dot``, ``abs``, ``square``, ``np.real``, ``np.imag``, ``np.angle``,
``np.real_if_close`` (parts known to be zero), ``.real``/``.imag``/``.conj()``, indexing,
real-linear numpy functions applied to both parts (``sum``, ``mean``, ``reshape``,
``transpose``, ``roll``, ``fftshift``, ...), and ``np.fft`` transforms (constant matrices
along the transformed axes: dense, as the transform is). Anything else raises
:class:`~sparsejac.errors.UnsupportedPrimitiveError`; a complex result of ``f`` is refused.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import scipy.sparse as sp

from sparsejac.errors import TracedConversionError, UnsupportedPrimitiveError
from sparsejac.primitives.core import register_function
from sparsejac.primitives.movement import register_movement
from sparsejac.tracing.callers import user_line
from sparsejac.tracing.tracer import Tracer

__all__ = ["ComplexPair", "involves_complex", "pair_function", "pair_ufunc"]

Part = Any  # a real Tracer, a real ndarray, or None (identically zero)


def _shape(a: Any) -> tuple[int, ...]:
    if isinstance(a, ComplexPair):
        return a.shape
    return tuple(np.shape(a._var.value if isinstance(a, Tracer) else a))


class ComplexPair:
    """A complex array ``re + 1j * im`` whose parts are real (traced or constant) arrays."""

    __array_priority__ = 2000.0
    _sparsejac_complex = True
    __hash__ = None  # type: ignore[assignment]

    def __init__(self, re: Part, im: Part, shape: tuple[int, ...]) -> None:
        self.re = re
        self.im = im
        self.shape = tuple(shape)

    # -- numpy protocol ------------------------------------------------------------------
    def __array_ufunc__(self, ufunc: np.ufunc, method: str, *inputs: Any, **kwargs: Any) -> Any:
        return pair_ufunc(ufunc, method, inputs, kwargs)

    def __array_function__(self, func: Any, types: Any, args: tuple[Any, ...],
                           kwargs: dict[str, Any]) -> Any:
        return pair_function(func, args, kwargs)

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        where = user_line()
        dot = ("If this is A.dot(z) with a plain ndarray A (numpy does not hand that method's "
               "argument to the tracer), write A @ z or np.dot(A, z). Otherwise: "
               if ".dot(" in where else "")
        raise TracedConversionError(
            f"a complex intermediate computed from x was converted to a plain numpy array"
            f"{where}, which would lose its dependence on x. {dot}It came through a call the "
            "tracer cannot follow, or by assignment into a plain complex array (complex "
            "buffers such as np.zeros(n, dtype=complex) are not traced; build the complex "
            "array from traced parts instead: re + 1j * im, c * 1j, np.concatenate, np.where)")

    def dot(self, b: Any) -> Any:
        """``z.dot(b)``: ``np.dot(z, b)``."""
        return _dot(self, b)

    def __bool__(self) -> bool:
        raise TracedConversionError("the truth value of a traced complex array is not defined")

    # -- attributes and operators --------------------------------------------------------
    @property
    def ndim(self) -> int:
        """Number of dimensions."""
        return len(self.shape)

    @property
    def size(self) -> int:
        """Number of elements."""
        return int(np.prod(self.shape))

    @property
    def dtype(self) -> np.dtype[Any]:
        """Always complex128."""
        return np.dtype(np.complex128)

    @property
    def real(self) -> Any:
        """The real part (a real traced array)."""
        return _full(self.re, self.shape)

    @real.setter
    def real(self, value: Any) -> None:
        raise UnsupportedPrimitiveError(
            "assignment to .real", "of a complex intermediate: build it from its parts, "
            "z = re + 1j * im")

    @property
    def imag(self) -> Any:
        """The imaginary part (a real traced array)."""
        return _full(self.im, self.shape)

    @imag.setter
    def imag(self, value: Any) -> None:
        raise UnsupportedPrimitiveError(
            "assignment to .imag", "of a complex intermediate: build it from its parts, "
            "z = re + 1j * im")

    @property
    def T(self) -> Any:
        """Transpose."""
        return np.transpose(self)

    def conj(self) -> Any:
        """Complex conjugate."""
        return np.conjugate(self)

    conjugate = conj

    def reshape(self, *shape: Any) -> Any:
        """As ndarray.reshape."""
        return np.reshape(self, shape[0] if len(shape) == 1 else shape)

    def sum(self, *args: Any, **kwargs: Any) -> Any:
        """As ndarray.sum."""
        return np.sum(self, *args, **kwargs)

    def copy(self) -> Any:
        """As ndarray.copy."""
        return np.copy(self)

    def ravel(self) -> Any:
        """As ndarray.ravel."""
        return np.ravel(self)

    flatten = ravel

    def astype(self, dtype: Any, *args: Any, **kwargs: Any) -> Any:
        """To a complex dtype only (a real one would drop the imaginary part)."""
        if np.dtype(dtype).kind != "c":
            raise UnsupportedPrimitiveError(
                "ndarray.astype", f"of a complex intermediate to {np.dtype(dtype)}: take "
                ".real, .imag or np.abs explicitly")
        return self

    def __getattr__(self, name: str) -> Any:
        # an ndarray attribute without a rule for complex values: say so (still an
        # AttributeError, so that hasattr() works)
        if not name.startswith("_") and hasattr(np.ndarray, name):
            raise AttributeError(
                f"ndarray.{name} is not supported on a complex intermediate (complex "
                "intermediates support + - * /, conj, exp, abs, square, real, imag, angle, "
                "real-linear functions and np.fft; see docs/limitations.md)")
        raise AttributeError(name)

    def _compare(self, *_: Any) -> Any:
        raise UnsupportedPrimitiveError(
            "comparison", "of a complex intermediate (complex numbers have no order)")

    __lt__ = __le__ = __gt__ = __ge__ = _compare

    def __eq__(self, o: Any) -> Any:
        return np.equal(self, o)

    def __ne__(self, o: Any) -> Any:
        return np.not_equal(self, o)

    def mean(self, *args: Any, **kwargs: Any) -> Any:
        """As ndarray.mean."""
        return np.mean(self, *args, **kwargs)

    def __getitem__(self, key: Any) -> Any:
        probe = np.empty(self.shape)[key]
        return _make(_apply(lambda p: p[key], self.re), _apply(lambda p: p[key], self.im),
                     probe.shape)

    def __len__(self) -> int:
        return self.shape[0]

    def __setitem__(self, key: Any, value: Any) -> None:
        raise UnsupportedPrimitiveError(
            "item assignment", "into a complex intermediate: build it from its parts instead, "
            "z = re + 1j * im, with the writes done into re and im")

    def __add__(self, o: Any) -> Any:
        return np.add(self, o)

    def __radd__(self, o: Any) -> Any:
        return np.add(o, self)

    def __sub__(self, o: Any) -> Any:
        return np.subtract(self, o)

    def __rsub__(self, o: Any) -> Any:
        return np.subtract(o, self)

    def __mul__(self, o: Any) -> Any:
        return np.multiply(self, o)

    def __rmul__(self, o: Any) -> Any:
        return np.multiply(o, self)

    def __truediv__(self, o: Any) -> Any:
        return np.true_divide(self, o)

    def __rtruediv__(self, o: Any) -> Any:
        return np.true_divide(o, self)

    def __matmul__(self, o: Any) -> Any:
        return np.matmul(self, o)

    def __rmatmul__(self, o: Any) -> Any:
        return np.matmul(o, self)

    def __neg__(self) -> Any:
        return np.negative(self)

    def __pos__(self) -> Any:
        return self

    def __abs__(self) -> Any:
        return np.absolute(self)

    def __pow__(self, o: Any) -> Any:
        return np.power(self, o)

    def __repr__(self) -> str:
        return f"ComplexPair(shape={self.shape})"


def _apply(fn: Callable[[Any], Any], p: Part) -> Part:
    return None if p is None else fn(p)


def _full(p: Part, shape: tuple[int, ...]) -> Any:
    return np.zeros(shape) if p is None else p


def _is_zero(p: Part) -> bool:
    if p is None or isinstance(p, Tracer):
        return p is None
    if sp.issparse(p):
        return bool(p.count_nonzero() == 0)
    return not np.any(p)


def _make(re: Part, im: Part, shape: tuple[int, ...]) -> Any:
    """A ComplexPair, or a complex constant when neither part is traced.

    A traced value stays complex even when its imaginary part is known to be zero
    (``y + 0j``): numpy computes complex functions of it (``np.sqrt(y + 0j)`` of a negative
    ``y`` is imaginary), which must be refused or followed as complex, not taken as real.
    """
    re = None if _is_zero(re) else re
    im = None if _is_zero(im) else im
    if not isinstance(re, Tracer) and not isinstance(im, Tracer):
        return _full(re, shape) + 1j * _full(im, shape)
    return ComplexPair(re, im, shape)


def _split(a: Any) -> tuple[Part, Part]:
    if isinstance(a, ComplexPair):
        return a.re, a.im
    if isinstance(a, Tracer):
        return a, None
    if sp.issparse(a):  # a constant sparse matrix (an admittance matrix Ybus @ V)
        if a.dtype.kind == "c":
            return a.real, a.imag
        return a, None
    arr = np.asarray(a)
    if arr.dtype.kind == "c":
        return arr.real.copy(), arr.imag.copy()
    return arr, None


def _add(a: Part, b: Part) -> Part:
    if a is None:
        return b
    if b is None:
        return a
    return a + b


def _neg(a: Part) -> Part:
    return None if a is None else -a


def _mul(a: Part, b: Part) -> Part:
    if _is_zero(a) or _is_zero(b):
        return None
    return a * b


def _mm(a: Part, b: Part) -> Part:
    if _is_zero(a) or _is_zero(b):
        return None
    return np.matmul(a, b)


def involves_complex(args: Any, kwargs: dict[str, Any] | None = None) -> bool:
    """Whether a call with Tracers has a complex operand (a ComplexPair or a complex constant).

    One pass over the operands (lists and tuples one level deep): it runs at every traced
    ufunc and numpy call.
    """
    traced = complex_const = False
    for group in (args, () if not kwargs else kwargs.values()):
        for item in group:
            for a in (item if isinstance(item, (list, tuple)) else (item,)):
                if isinstance(a, ComplexPair):
                    return True
                if isinstance(a, Tracer):
                    traced = True
                elif isinstance(a, (complex, np.complexfloating)) or (
                        isinstance(a, np.ndarray) and a.dtype.kind == "c"):
                    complex_const = True
    return traced and complex_const


def _refuse(name: str) -> UnsupportedPrimitiveError:
    return UnsupportedPrimitiveError(
        name, "with a complex operand (complex intermediates support + - * /, conj, exp, abs, "
        "square, real, imag, angle, real-linear functions and np.fft; see docs/limitations.md)")


def pair_ufunc(ufunc: np.ufunc, method: str, inputs: tuple[Any, ...], kwargs: dict[str, Any]
               ) -> Any:
    """A ufunc call with a complex operand, written with real operations on the parts."""
    name = f"numpy.{ufunc.__name__}"
    if method != "__call__" or kwargs.get("out") is not None or \
            set(kwargs) - {"out", "dtype"}:
        raise _refuse(name + ("" if method == "__call__" else f".{method}"))
    shape = tuple(np.broadcast_shapes(*(_shape(a) for a in inputs)))
    parts = [_split(a) for a in inputs]
    if ufunc in (np.add, np.subtract):
        (ar, ai), (br, bi) = parts
        if ufunc is np.subtract:
            br, bi = _neg(br), _neg(bi)
        return _make(_add(ar, br), _add(ai, bi), shape)
    if ufunc is np.multiply:
        (ar, ai), (br, bi) = parts
        return _make(_add(_mul(ar, br), _neg(_mul(ai, bi))), _add(_mul(ar, bi), _mul(ai, br)),
                     shape)
    if ufunc is np.matmul and not kwargs:  # (ar + i ai) @ (br + i bi), part by part
        (ar, ai), (br, bi) = ([q if q is None or np.shape(q) == _shape(a) else
                               np.broadcast_to(q, _shape(a)) for q in p]  # (x + 1j: im ())
                              for p, a in zip(parts, inputs, strict=True))
        out_shape = np.matmul(np.empty(_shape(inputs[0])), np.empty(_shape(inputs[1]))).shape
        return _make(_add(_mm(ar, br), _neg(_mm(ai, bi))), _add(_mm(ar, bi), _mm(ai, br)),
                     out_shape)
    if ufunc is np.true_divide:
        (ar, ai), (br, bi) = parts
        den = _add(_mul(br, br), _mul(bi, bi))
        num = pair_ufunc(np.multiply, "__call__", (inputs[0], _make(br, _neg(bi), _shape(
            inputs[1]))), {})
        nr, ni = _split(num)
        return _make(_apply(lambda p: p / den, nr), _apply(lambda p: p / den, ni), shape)
    if ufunc in (np.equal, np.not_equal):  # both parts equal; each a traced comparison
        (ar, ai), (br, bi) = parts
        same = np.logical_and(np.equal(_full(ar, shape), _full(br, shape)),
                              np.equal(_full(ai, shape), _full(bi, shape)))
        return same if ufunc is np.equal else np.logical_not(same)
    k = _small_int(inputs[1]) if ufunc is np.power else None
    if k is not None:  # z ** k: products of z
        return _int_power(inputs[0], k, shape)
    if ufunc is np.reciprocal:
        return pair_ufunc(np.true_divide, "__call__", (1.0, inputs[0]), {})
    if len(parts) != 1:  # a binary ufunc without a rule for complex values (power, maximum)
        raise _refuse(name)
    (ar, ai), = parts
    if ufunc is np.negative:
        return _make(_neg(ar), _neg(ai), shape)
    if ufunc is np.positive:
        return _make(ar, ai, shape)
    if ufunc is np.conjugate:
        return _make(ar, _neg(ai), shape)
    if ufunc is np.square:
        return pair_ufunc(np.multiply, "__call__", (inputs[0], inputs[0]), {})
    if ufunc is np.exp:
        mag = np.exp(_full(ar, shape))
        if ai is None:
            return mag
        return _make(mag * np.cos(ai), mag * np.sin(ai), shape)
    if ufunc in _TRIG:  # sin(a + ib) = sin a cosh b + i cos a sinh b, and the like
        return _trig(ufunc, ar, ai, shape)
    if ufunc is np.absolute:
        if ai is None:
            return np.abs(_full(ar, shape))
        if ar is None:
            return np.abs(ai)
        return np.hypot(ar, ai)
    raise _refuse(name)


#: (f, g, sign, h, k): f(a + ib) = f(a) g(b) + i sign h(a) k(b)
_TRIG: dict[Any, tuple[Any, Any, float, Any, Any]] = {
    np.sin: (np.sin, np.cosh, 1.0, np.cos, np.sinh),
    np.cos: (np.cos, np.cosh, -1.0, np.sin, np.sinh),
    np.sinh: (np.sinh, np.cos, 1.0, np.cosh, np.sin),
    np.cosh: (np.cosh, np.cos, 1.0, np.sinh, np.sin)}


def _trig(ufunc: np.ufunc, ar: Part, ai: Part, shape: tuple[int, ...]) -> Any:
    """``sin``, ``cos``, ``sinh``, ``cosh`` of ``ar + i ai`` from real functions of the parts."""
    f, g, sign, h, k = _TRIG[ufunc]
    a = _full(ar, shape)
    if ai is None:  # (g(0) = 1, k(0) = 0)
        return _make(f(a), None, shape)
    im = h(a) * k(ai)
    return _make(f(a) * g(ai), im if sign > 0 else -im, shape)


def _small_int(b: Any) -> int | None:
    """A constant integer exponent of at most 16 in size (``z ** 2``), else None."""
    if isinstance(b, (ComplexPair, Tracer)) or np.ndim(b) != 0:
        return None
    v = complex(np.asarray(b))
    if v.imag != 0.0 or v.real != round(v.real) or abs(v.real) > 16:
        return None
    return int(v.real)


def _int_power(z: Any, k: int, shape: tuple[int, ...]) -> Any:
    """``z ** k`` as products of ``z`` (and a reciprocal for a negative ``k``)."""
    if k == 0:
        return _make(np.ones(shape), None, shape)
    result = z
    for _ in range(abs(k) - 1):
        result = pair_ufunc(np.multiply, "__call__", (result, z), {})
    if k < 0:
        result = pair_ufunc(np.true_divide, "__call__", (1.0, result), {})
    return result


def _dot(a: Any, b: Any, out: Any = None) -> Any:
    """``np.dot`` of vectors and matrices: ``@`` (a scalar operand: ``*``)."""
    if out is not None or max(len(_shape(a)), len(_shape(b))) > 2:
        raise _refuse("numpy.dot")
    if not _shape(a) or not _shape(b):
        return pair_ufunc(np.multiply, "__call__", (a, b), {})
    return pair_ufunc(np.matmul, "__call__", (a, b), {})


#: real-linear numpy functions (real coefficients) applied to each part separately
_LINEAR = [np.sum, np.mean, np.reshape, np.transpose, np.moveaxis, np.swapaxes, np.squeeze,
           np.expand_dims, np.ravel, np.roll, np.flip, np.cumsum, np.diff, np.copy, np.trace,
           np.broadcast_to, np.take, np.fft.fftshift, np.fft.ifftshift, np.atleast_1d,
           np.atleast_2d, np.diagonal, np.tile, np.repeat, np.diag]


def pair_function(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """A numpy function call with a complex operand."""
    from sparsejac.primitives.core import public_name

    name = public_name(func)
    handler = _FUNCTIONS.get(func)
    if handler is not None:
        return handler(*args, **kwargs)
    if func in _LINEAR and args and isinstance(args[0], ComplexPair) and not any(
            isinstance(a, ComplexPair) for a in (*args[1:], *kwargs.values())):
        z = args[0]
        re = _apply(lambda p: func(_full(p, z.shape), *args[1:], **kwargs), z.re)
        im = _apply(lambda p: func(p, *args[1:], **kwargs), z.im)
        if re is None:
            re = func(np.zeros(z.shape), *args[1:], **kwargs) * 0.0
        return _make(re, im, _shape(re))
    raise _refuse(name)


def _real(val: Any) -> Any:
    return _full(_split(val)[0], _shape(val))


def _imag(val: Any) -> Any:
    return _full(_split(val)[1], _shape(val))


def _angle(z: Any, deg: bool = False) -> Any:
    re, im = _split(z)
    res = np.arctan2(_full(im, _shape(z)), _full(re, _shape(z)))
    return res * (180.0 / np.pi) if deg else res


def _real_if_close(a: Any, tol: float = 100) -> Any:
    re, im = _split(a)
    if _is_zero(im):
        return _full(re, _shape(a))
    raise UnsupportedPrimitiveError(
        "numpy.real_if_close", "a traced complex imaginary part (whether it is close to zero "
        "depends on x); take `.real` if that is what you mean")


# -- np.fft: constant matrices along the transformed axes -------------------------------------


def _fft_matrix(kind: str, n_in: int, n: int | None, norm: Any) -> tuple[np.ndarray, np.ndarray]:
    """(A, B) with ``transform(u + i v) = (A u) + i (B u) ...``: see :func:`_transform`."""
    eye = np.eye(n_in)
    fn = getattr(np.fft, kind)
    m_re = fn(eye, n=n, axis=0, norm=norm)        # the image of real unit vectors
    if kind == "rfft":  # a real transform: the imaginary part of its input is discarded
        return np.asarray(m_re), np.zeros_like(np.asarray(m_re))
    m_im = fn(1j * eye, n=n, axis=0, norm=norm)   # the image of imaginary unit vectors
    return np.asarray(m_re), np.asarray(m_im)


def _clean(m: np.ndarray) -> np.ndarray:
    """Rounding residue of exact zeros (cos(pi/2)) becomes an exact zero."""
    scale = np.abs(m).max(initial=0.0)
    return np.where(np.abs(m) <= 1e-14 * scale, 0.0, m)


def _along(m: np.ndarray, p: Part, axis: int) -> Part:
    if _is_zero(p):
        return None
    if not np.any(m):
        return None
    return np.moveaxis(np.tensordot(m, p, axes=([1], [axis])), 0, axis)


def _transform(kind: str, a: Any, n: Any = None, axis: int = -1, norm: Any = None) -> Any:
    shape = _shape(a)
    ax = int(axis) % len(shape)
    re, im = _split(a)
    m_re, m_im = _fft_matrix(kind, shape[ax], n, norm)
    # out = m_re @ re + m_im @ im, for the real and imaginary parts of m_re, m_im
    out_re = _add(_along(_clean(m_re.real), re, ax), _along(_clean(m_im.real), im, ax))
    out_im = _add(_along(_clean(m_re.imag), re, ax), _along(_clean(m_im.imag), im, ax))
    out_shape = list(shape)
    out_shape[ax] = m_re.shape[0]
    if not np.iscomplexobj(m_re):  # irfft, hfft: numpy's result is real
        return _full(out_re, tuple(out_shape))
    return _make(out_re, out_im, tuple(out_shape))


def _one_axis(kind: str) -> Callable[..., Any]:
    def handler(a: Any, n: Any = None, axis: int = -1, norm: Any = None, out: Any = None) -> Any:
        if out is not None:
            raise UnsupportedPrimitiveError(f"numpy.fft.{kind}", "the `out=` argument")
        return _transform(kind, a, n, axis, norm)

    return handler


def _two_axes(kind: str) -> Callable[..., Any]:
    def handler(a: Any, s: Any = None, axes: Any = None, norm: Any = None,
                out: Any = None) -> Any:
        if out is not None or s is not None:
            raise UnsupportedPrimitiveError(f"numpy.fft.{kind}", "`s=`/`out=` arguments")
        res = a
        for ax in list(range(len(_shape(a))) if axes is None else axes)[::-1]:
            res = _transform(kind, res, None, ax, norm)
        return res

    return handler


def _axes2(h: Callable[..., Any]) -> Callable[..., Any]:
    def handler(a: Any, s: Any = None, axes: Any = (-2, -1), norm: Any = None,
                out: Any = None) -> Any:
        return h(a, s, axes, norm, out)

    return handler


def _joined(func: Any) -> Callable[..., Any]:
    """``np.concatenate`` / ``np.stack`` / ``hstack`` / ``vstack`` of a sequence, part by part."""
    def handler(arrays: Any, *args: Any, **kwargs: Any) -> Any:
        arrays = list(arrays)
        if any(isinstance(a, ComplexPair) for a in (*args, *kwargs.values())):
            raise _refuse(f"numpy.{func.__name__}")
        parts = [(_split(a), _shape(a)) for a in arrays]
        re = func([_full(r, sh) for (r, _), sh in parts], *args, **kwargs)
        im = None if all(_is_zero(i) for (_, i), _ in parts) else func(
            [_full(i, sh) for (_, i), sh in parts], *args, **kwargs)
        return _make(re, im, _shape(re))

    return handler


def _append(arr: Any, values: Any, axis: Any = None) -> Any:
    return _joined(np.concatenate)(
        [np.ravel(arr), np.ravel(values)] if axis is None else [arr, values], axis=axis or 0)


def _where(cond: Any, a: Any = None, b: Any = None) -> Any:
    """``np.where(cond, a, b)`` with a real condition: each part selected."""
    if a is None or b is None or isinstance(cond, ComplexPair):
        raise _refuse("numpy.where")
    shape = tuple(np.broadcast_shapes(_shape(cond), _shape(a), _shape(b)))
    (ar, ai), (br, bi) = _split(a), _split(b)
    re = np.where(cond, _full(ar, _shape(a)), _full(br, _shape(b)))
    im = None if _is_zero(ai) and _is_zero(bi) else np.where(
        cond, _full(ai, _shape(a)), _full(bi, _shape(b)))
    return _make(re, im, shape)


def _outer(a: Any, b: Any) -> Any:
    return pair_ufunc(np.multiply, "__call__", (np.reshape(a, (-1, 1)), np.reshape(b, (1, -1))),
                      {})


def _vdot(a: Any, b: Any) -> Any:
    return _dot(np.conj(np.ravel(a)), np.ravel(b))


def _filled(value: float) -> Callable[..., Any]:
    """``np.zeros_like(z)`` / ``np.ones_like(z)`` of a complex pair: a complex constant."""
    def handler(a: Any, dtype: Any = None, order: Any = "K", subok: bool = True,
                shape: Any = None) -> Any:
        return np.full(_shape(a) if shape is None else shape, value,
                       dtype=np.complex128 if dtype is None else dtype)

    return handler


_FUNCTIONS: dict[Any, Callable[..., Any]] = {
    np.outer: _outer, np.vdot: _vdot, np.zeros_like: _filled(0.0), np.ones_like: _filled(1.0),
    np.real: _real, np.imag: _imag, np.angle: _angle, np.real_if_close: _real_if_close,
    np.dot: _dot,  # (complex operands only: numpy's own rule serves real ones)
    np.concatenate: _joined(np.concatenate), np.stack: _joined(np.stack),
    np.hstack: _joined(np.hstack), np.vstack: _joined(np.vstack), np.append: _append,
    np.where: _where, np.ndim: lambda a: len(_shape(a)), np.shape: _shape,
    np.size: lambda a, axis=None: int(np.prod(_shape(a))) if axis is None else _shape(a)[axis],
}
for _k in ("fft", "ifft", "rfft", "irfft"):
    _FUNCTIONS[getattr(np.fft, _k)] = _one_axis(_k)
for _k, _one in (("fft2", "fft"), ("ifft2", "ifft")):
    _FUNCTIONS[getattr(np.fft, _k)] = _axes2(_two_axes(_one))
for _k, _one in (("fftn", "fft"), ("ifftn", "ifft")):
    _FUNCTIONS[getattr(np.fft, _k)] = _two_axes(_one)

for _f, _note in ((np.real, "real part"), (np.imag, "imaginary part"), (np.angle, "arctan2"),
                  (np.real_if_close, "imaginary part structurally zero")):
    register_function(_f, family="complex", via="complex pair", note=_note)(_FUNCTIONS[_f])
for _k in ("fft", "ifft", "rfft", "irfft"):
    register_function(getattr(np.fft, _k), family="complex", via="constant matrix on the pair",
                      note="dense along the axis")(_FUNCTIONS[getattr(np.fft, _k)])
for _k in ("fft2", "ifft2", "fftn", "ifftn"):
    register_function(getattr(np.fft, _k), family="complex", via="constant matrix on the pair",
                      note="no `s=`; dense along the axes")(_FUNCTIONS[getattr(np.fft, _k)])

register_movement(np.fft.fftshift, note="constant `axes`")
register_movement(np.fft.ifftshift, note="constant `axes`")
