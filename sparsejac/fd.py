"""Compressed finite differences for black-box functions (approximate).

When ``f`` cannot be traced (it calls compiled code, or numpy functions sparsejac has no rule
for) but its sparsity is known, the columns of one colour group are perturbed together: one
evaluation of ``f`` per group gives one column of ``B ≈ J @ S`` (Curtis, Powell and Reid,
1974), which the colouring decompresses. The results are **approximations** with the usual
truncation and rounding errors; everything else in sparsejac is exact.

Step sizes follow scipy's rules (``scipy.optimize._numdiff``): a relative step of
``eps**(1/2)`` for ``"2-point"`` and ``"cs"`` and ``eps**(1/3)`` for ``"3-point"``, scaled by
``max(1, |x_j|)`` with the sign of ``x_j``, and rounded so that ``x + h`` is representable.
With bounds, every evaluation stays inside them, as in scipy's ``approx_derivative``
(:func:`bounded_steps`): a step that would leave them turns back or shortens, and a central
difference without room on one side becomes a one-sided second-order one.
"""

from __future__ import annotations

import builtins
import functools
import pickle
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import scipy.sparse as sp

from sparsejac.coloring import ColoringResult

__all__ = [
    "METHODS",
    "BoundParams",
    "SharedMap",
    "bounded_steps",
    "check_complex_step_of",
    "check_method",
    "check_workers",
    "evaluate_output",
    "fd_jacobian_data",
    "fd_steps",
    "missing_entries",
    "step_eps",
    "worker_map",
]

#: The finite-difference schemes.
METHODS = ("2-point", "3-point", "cs")
_EPS = np.finfo(np.float64).eps


def check_method(method: Any) -> str:
    """Validate a finite-difference method name.

    Parameters
    ----------
    method : str
        One of :data:`METHODS`.

    Returns
    -------
    str
        ``method``.

    Raises
    ------
    ValueError
        Any other value (the message lists the allowed ones).

    Examples
    --------
    >>> from sparsejac.fd import check_method
    >>> check_method("3-point")
    '3-point'
    >>> check_method("5-point")
    Traceback (most recent call last):
        ...
    ValueError: Unknown `fd_method` '5-point'; expected one of ['2-point', '3-point', 'cs'].
    """
    if not isinstance(method, str) or method not in METHODS:
        raise ValueError(f"Unknown `fd_method` {method!r}; expected one of {list(METHODS)}.")
    return str(method)


def step_eps(out_dtype: Any) -> float:
    """The machine epsilon steps are sized by: float64's, or that of ``f``'s coarser output.

    As scipy does, an ``f`` that returns float32 (or float16) gets steps sized by that
    type's epsilon: float64-sized steps would vanish in its rounding, giving a zero Jacobian.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsejac.fd import step_eps
    >>> bool(step_eps(np.float32) == np.finfo(np.float32).eps), step_eps(int) == step_eps(float)
    (True, True)
    """
    dt = np.dtype(out_dtype)
    if dt.kind in "fc":
        return max(float(_EPS), float(np.finfo(dt).eps))
    return float(_EPS)


def fd_steps(x: np.ndarray, method: str, eps: float = float(_EPS)) -> np.ndarray:
    """Absolute steps per element of ``x`` by scipy's rule (see the module docstring).

    ``eps`` is the machine epsilon of :func:`step_eps` (float64's by default).

    Examples
    --------
    >>> import numpy as np
    >>> from sparsejac.fd import fd_steps
    >>> fd_steps(np.array([0.0, -100.0]), "2-point") / np.sqrt(np.finfo(float).eps)
    array([   1., -100.])
    """
    rel = eps ** (1.0 / 3.0) if method == "3-point" else eps**0.5
    sign = np.where(x >= 0, 1.0, -1.0)
    h = rel * sign * np.maximum(1.0, np.abs(x))
    if method != "cs":
        h = (x + h) - x
    return np.asarray(h)


def evaluate_output(fun: Callable[[np.ndarray], Any], x: np.ndarray) -> np.ndarray:
    """``fun(x)`` as a flat real array, or a clear error for an output that is not one.

    ``fun`` gets a fresh copy of ``x``; the result is copied.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsejac.fd import evaluate_output
    >>> evaluate_output(lambda x: [x[0], 2 * x[1]], np.array([1.0, 2.0]))
    array([1., 4.])
    >>> evaluate_output(lambda x: None, np.ones(2))
    Traceback (most recent call last):
        ...
    TypeError: `f` must return an array of numbers (or a list of them); got NoneType
    """
    return _evaluate(fun, x, None)


def _evaluate(fun: Callable[[np.ndarray], Any], x: np.ndarray, n_out: int | None,
              complex_step: bool = False) -> np.ndarray:
    """``fun(x)`` flattened, or a clear error for an output that cannot be differenced.

    ``fun`` gets a fresh copy of ``x`` (it may write into its argument) and its result is
    copied (it may return a buffer it reuses at the next call).
    """
    return _checked(fun(np.array(x, copy=True)), n_out, complex_step)


_MISSING = object()


class BoundParams:
    """``call(z, *params)`` as a one-argument callable that pickles when ``call`` does.

    Examples
    --------
    >>> from sparsejac.fd import BoundParams
    >>> BoundParams(lambda z, t: z * t, (3.0,))(2.0)
    6.0
    """

    def __init__(self, call: Callable[..., Any], params: tuple[Any, ...]) -> None:
        self.call = call
        self.params = params

    def __call__(self, z: Any) -> Any:
        """``call(z, *params)``."""
        return self.call(z, *self.params)


def check_workers(workers: Any) -> Any:
    """``workers`` if it is None, a positive int, -1 (every CPU) or a map-like callable.

    Examples
    --------
    >>> from sparsejac.fd import check_workers
    >>> check_workers(2), check_workers(map) is map
    (2, True)
    """
    if workers is None or callable(workers):
        return workers
    if isinstance(workers, (int, np.integer)) and not isinstance(workers, bool) and (
            workers >= 1 or workers == -1):
        return int(workers)
    raise ValueError(f"`workers` must be None, a positive int, -1 (every CPU) or a map-like "
                     f"callable such as multiprocessing.Pool().map; got {workers!r}")


class SharedMap:
    """A ``workers=`` map callable held by a prepared Jacobian.

    A copy of the Jacobian (``copy.deepcopy``) shares it (a pool or an executor is not
    copied); pickling it pickles the callable, or says why it cannot (the map of a pool or
    an executor of this process).

    Examples
    --------
    >>> import copy
    >>> from sparsejac.fd import SharedMap
    >>> shared = SharedMap(map)
    >>> copy.deepcopy(shared) is shared, list(shared(abs, [-1, 2]))
    (True, [1, 2])
    """

    __slots__ = ("fn",)

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn = fn

    def __call__(self, func: Any, points: Any) -> Any:
        """``fn(func, points)``: the map itself."""
        return self.fn(func, points)

    def __deepcopy__(self, memo: Any) -> SharedMap:
        return self

    def __reduce__(self) -> tuple[Any, ...]:
        try:
            pickle.dumps(self.fn)
        except Exception as exc:
            raise TypeError(
                f"a prepared Jacobian with workers={self.fn!r} cannot be pickled: that map "
                f"belongs to a pool or an executor of this process ({type(exc).__name__}: "
                f"{exc}). Pickle a Jacobian prepared without workers= (or with "
                "workers=<int>, a pool made per Jacobian) and give it its map where it is "
                "loaded; copy.deepcopy shares the map.") from exc
        return (SharedMap, (self.fn,))


@contextmanager
def worker_map(workers: Any) -> Iterator[Callable[..., Any]]:
    """The map that evaluates ``f`` at the points of a finite-difference Jacobian.

    ``None`` or 1: Python's ``map`` in this process; an int: a ``multiprocessing`` pool of
    that many processes for this Jacobian (``f`` must pickle; -1 uses every CPU); a
    callable: used as it is (``pool.map``, ``executor.map``, a dask client's map wrapper),
    ``workers(f, points) -> results`` in the order of the points.

    Examples
    --------
    >>> from sparsejac.fd import worker_map
    >>> with worker_map(None) as m:
    ...     list(m(abs, [-1, 2]))
    [1, 2]
    """
    workers = check_workers(workers)
    if workers is None or workers == 1:
        yield builtins.map
    elif callable(workers):
        yield workers
    else:
        import multiprocessing

        with multiprocessing.Pool(None if workers == -1 else workers) as pool:
            yield functools.partial(_pool_map, pool.map, workers)


def _pool_map(pool_map: Callable[..., Any], workers: int, func: Any, points: Any) -> Any:
    """``pool_map(func, points)``, with pickle's errors explained (an int ``workers``)."""
    try:
        return pool_map(func, points)
    except (pickle.PicklingError, AttributeError, TypeError) as exc:
        if "pickle" not in str(exc):
            raise
        raise TypeError(
            f"workers={workers}: f is sent to other processes, so it must pickle, and this one "
            f"does not ({type(exc).__name__}: {exc}). Define f at a module's top level (not "
            "a lambda, a nested function or a closure), or evaluate in threads of this "
            "process: workers=concurrent.futures.ThreadPoolExecutor().map") from exc


def _checked(val: Any, n_out: int | None, complex_step: bool = False) -> np.ndarray:
    """``val`` (an output of ``f``) as a flat copy, or a clear error (see :func:`_evaluate`)."""
    try:
        arr = np.array(val, copy=True)
    except (TypeError, ValueError):  # ragged lists
        arr = np.asarray(None)
    if arr.dtype == object:
        raise TypeError(
            "`f` must return an array of numbers (or a list of them); "
            f"got {type(val).__name__}"
        )
    if arr.dtype.kind == "b":
        raise TypeError(
            "`f` returned a boolean array; a Jacobian needs numbers (convert with "
            ".astype(float) if that is what you mean)"
        )
    if complex_step and arr.dtype.kind != "c":
        raise TypeError(
            f"fd_method='cs' needs `f` to carry complex input through to its output, but f "
            f"returned dtype {arr.dtype} (the imaginary part was dropped, e.g. by writing into "
            "a float array); use '2-point' or '3-point'"
        )
    if arr.dtype.kind == "c" and not complex_step and not np.imag(arr).any():
        arr = np.real(arr).copy()  # complex-typed but real (f written for the complex step)
    if arr.dtype.kind not in "iuf" and not complex_step:
        kind = "complex numbers" if arr.dtype.kind == "c" else f"dtype {arr.dtype}"
        raise TypeError(f"`f` must return real numbers; it returned an array of {kind}")
    if n_out is not None and arr.size != n_out:
        raise ValueError(
            f"`f` returned {arr.size} values (shape {arr.shape}); expected {n_out}, the "
            "number of rows of the sparsity pattern (f's output size must not change)"
        )
    return arr.ravel()


def bounded_steps(x: np.ndarray, h: np.ndarray, method: str, lb: np.ndarray, ub: np.ndarray
                  ) -> tuple[np.ndarray, np.ndarray]:
    """Steps that keep every evaluation point within ``lb <= x <= ub``, and which are one-sided.

    ``h`` are the unbounded steps of :func:`fd_steps`. ``"2-point"`` evaluates at ``x + h``:
    a step that would leave the box turns back where the other side has room, else it
    becomes the distance to the farther bound. ``"3-point"`` evaluates at ``x ± h`` where both
    fit; elsewhere a central difference with the nearer bound's distance if that is no
    shorter than the one-sided step, else the one-sided second-order difference
    ``(-3 f(x) + 4 f(x + h) - f(x + 2h)) / 2h`` towards the farther bound, with ``|h|`` at
    most half its distance (the rule of scipy's ``approx_derivative``). ``"cs"`` steps in the
    imaginary direction only and is returned unchanged. Steps are rounded so that ``x + h``
    is representable.

    Parameters
    ----------
    x, h : ndarray
        The point (within the bounds) and the unbounded steps, flat.
    method : {"2-point", "3-point", "cs"}
        The scheme.
    lb, ub : ndarray
        Bounds, flat, ``lb < ub`` (infinite where there is none).

    Returns
    -------
    (h, one_sided)
        The steps, and a boolean mask of the ``"3-point"`` columns that use the one-sided
        formula (all False for the other schemes).

    Examples
    --------
    >>> import numpy as np
    >>> from sparsejac.fd import bounded_steps
    >>> x, h = np.array([0.0, 0.5, 1.0]), np.full(3, 0.125)
    >>> lb, ub = np.zeros(3), np.ones(3)
    >>> bounded_steps(x, h, "2-point", lb, ub)[0]
    array([ 0.125,  0.125, -0.125])
    >>> bounded_steps(x, h, "3-point", lb, ub)
    (array([ 0.125,  0.125, -0.125]), array([ True, False,  True]))
    """
    one_sided = np.zeros(x.shape, dtype=bool)
    if method == "cs":
        return h, one_sided
    lower, upper = x - lb, ub - x
    toward_upper = upper >= lower
    far = np.where(toward_upper, upper, lower)
    size = np.abs(h)
    if method == "2-point":
        moved = ((x + h) < lb) | ((x + h) > ub)  # turn back where it fits, else the far bound
        step = np.where(size <= far, size, far)
    else:
        near = np.minimum(lower, upper)
        moved = near < size  # no room for x ± |h|
        step = np.minimum(size, 0.5 * far)  # one-sided: x + h and x + 2h within the bounds
        central = moved & (step <= near)  # a shorter central difference fits and is better
        one_sided = moved & ~central
        step = np.where(central, near, step)
        toward_upper = toward_upper | central
    if not moved.any():
        return h, one_sided
    out = h.copy()
    out[moved] = np.where(toward_upper[moved], step[moved], -step[moved])
    out[moved] = (x[moved] + out[moved]) - x[moved]
    return out, one_sided


def fd_jacobian_data(
    fun: Callable[[np.ndarray], Any],
    x: np.ndarray,
    coloring: ColoringResult,
    *,
    method: str = "2-point",
    n_out: int,
    out: np.ndarray | None = None,
    map: Callable[..., Any] | None = None,
    out_dtype: Any = None,
    bounds: tuple[np.ndarray, np.ndarray] | None = None,
    check_complex_step: bool = False,
) -> np.ndarray:
    """Nonzeros of an *approximate* Jacobian (CSR order) by compressed finite differences.

    Parameters
    ----------
    fun : callable
        ``fun(x) -> array`` (``x`` with the shape of ``x``); called ``p + 1`` times
        (``2p`` for ``"3-point"``), where ``p`` is the number of colours.
    x : ndarray
        The point.
    coloring : ColoringResult
        A column colouring of the sparsity pattern.
    method : {"2-point", "3-point", "cs"}
        Forward, central or complex-step differences (``"cs"`` needs ``fun`` to accept and
        propagate complex input).
    n_out : int
        Expected output size.
    out : ndarray, optional
        Where to write the values.
    map : callable, optional
        ``map(fun, points) -> results`` (Python's ``map`` by default): evaluates ``fun`` at
        every point, in any way (a process pool, a cluster); the results, in the order of
        the points, are combined here in a fixed order, so they are bit-identical whatever
        evaluates them.
    out_dtype : dtype, optional
        The dtype ``fun`` returns, which sizes the steps (:func:`step_eps`); if not given,
        ``fun(x)`` is evaluated first, in this process, to find it (for ``"2-point"`` that is
        the evaluation at ``x`` it needs anyway).
    bounds : (lb, ub), optional
        Flat float64 bounds that every evaluation point stays within (:func:`bounded_steps`;
        a one-sided ``"3-point"`` column costs one more evaluation, at ``x``, in all).
    check_complex_step : bool
        With ``"cs"`` (and no ``bounds``), compare the first complex step with real steps
        (:func:`check_complex_step`; two to three more evaluations of ``fun``).

    Returns
    -------
    ndarray of float64
        Approximate nonzero values in the pattern's CSR order.

    Examples
    --------
    >>> import numpy as np
    >>> import sparsejac
    >>> from sparsejac.fd import fd_jacobian_data
    >>> pattern = np.eye(4) + np.eye(4, k=1)
    >>> c = sparsejac.color(pattern, "column")
    >>> f = lambda x: np.append(x[:-1] * x[1:], x[-1] ** 2)
    >>> fd_jacobian_data(f, np.arange(1.0, 5.0), c, method="cs", n_out=4).round(6)
    array([2., 1., 3., 2., 4., 3., 8.])
    """
    check_method(method)
    if coloring.partition != "column" or coloring.column_groups is None:
        raise ValueError("finite differences need a column colouring")
    x = np.asarray(x, dtype=np.float64)
    xf = x.ravel()
    groups = coloring.column_groups
    p = coloring.n_colors
    f0: np.ndarray | None = None
    if out_dtype is None:
        f0 = _evaluate(fun, x, n_out)
        out_dtype = f0.dtype
    h = fd_steps(xf, method, step_eps(out_dtype))
    one_sided = None
    if bounds is not None:
        h, one_sided = bounded_steps(xf, h, method, *bounds)
        one_sided = one_sided if one_sided.any() else None
    # in a box a few ulps wide the one-sided step is 0, or x + 2h lies a rounding past the
    # bound (clipped: other weights), or the rounding of -3 f0 + 4 f1 - f2 swamps the
    # difference: it gave 0/0 or half the slope of a linear f. Columns whose one-sided step is
    # under 64 spacings of x take the forward difference to the farther bound instead (x + h
    # is that bound; x + 2h, clipped, too).
    forward = None
    if one_sided is not None:
        assert bounds is not None
        lb, ub = bounds
        degenerate = one_sided & (np.abs(h) < 64.0 * np.spacing(np.abs(xf)))
        if degenerate.any():
            forward = degenerate
            h = np.where(forward, np.where(ub - xf >= xf - lb, ub, lb) - xf, h)
    if method != "2-point" and one_sided is None:
        f0 = None
    order = np.argsort(groups, kind="stable")
    bounds_of = np.searchsorted(groups[order], np.arange(p + 1))
    # 3-point: x + d_hi and x + d_lo, where d = (h, -h) (central) or (2h, h) (one-sided)
    d_hi = h if one_sided is None else np.where(one_sided, 2.0 * h, h)
    d_lo = -h if one_sided is None else np.where(one_sided, h, -h)
    need_f0 = (method == "2-point" or one_sided is not None) and f0 is None

    def inside(z: np.ndarray) -> np.ndarray:  # x + 2h may round one ulp past a bound
        return z if bounds is None else np.clip(z, *bounds)

    def points() -> Iterator[np.ndarray]:  # generated one at a time (p can be n)
        if need_f0:
            yield np.array(x, copy=True)
        for c in range(p):
            cols = order[bounds_of[c]:bounds_of[c + 1]]
            if method == "cs":
                dz = np.zeros(xf.size, dtype=np.complex128)
                dz[cols] = 1j * h[cols]
                yield (xf + dz).reshape(x.shape)
                continue
            dx = np.zeros(xf.size)
            dx[cols] = h[cols] if method == "2-point" else d_hi[cols]
            yield inside(xf + dx).reshape(x.shape)
            if method == "3-point":
                dx[cols] = d_lo[cols]
                yield inside(xf + dx).reshape(x.shape)

    cs = method == "cs"
    expected = p + need_f0 if method != "3-point" else 2 * p + need_f0
    if cs:
        expected = p
    mapped = (builtins.map if map is None else map)(fun, points())
    try:
        results = iter(mapped)
    except TypeError:
        raise TypeError(f"`workers` must return the results of f at the points (an iterable); "
                        f"got {type(mapped).__name__}") from None
    got = 0

    def take() -> np.ndarray:
        nonlocal got
        value = next(results, _MISSING)
        if value is _MISSING:
            raise ValueError(f"`workers` returned {got} results for {expected} points")
        got += 1
        return _checked(value, n_out, complex_step=cs)

    b = np.empty((n_out, p))
    b_one = None if one_sided is None else np.empty((n_out, p))  # -3 f0 + 4 f(x+h) - f(x+2h)
    b_fwd = None if forward is None else np.empty((n_out, p))  # f(x + h) - f0
    if need_f0:
        f0 = take()
    for c in range(p):
        if method == "cs":
            b[:, c] = take().imag
        elif method == "2-point":
            assert f0 is not None
            b[:, c] = take() - f0
        else:
            hi = take()
            lo = take()
            b[:, c] = hi - lo
            if b_one is not None:
                assert f0 is not None
                b_one[:, c] = 4.0 * lo - 3.0 * f0 - hi
            if b_fwd is not None:
                assert f0 is not None
                b_fwd[:, c] = lo - f0
    if next(results, _MISSING) is not _MISSING:
        raise ValueError(f"`workers` returned more results than the {expected} points")
    if cs and check_complex_step and p and bounds is None:
        check_complex_step_of(fun, x, h, order[bounds_of[0]:bounds_of[1]], b[:, 0], n_out)
    data = coloring.decompress_data(B=b, out=out)
    if b_one is not None:
        assert one_sided is not None
        one_sided_entries = one_sided[coloring.pattern.indices]
        np.copyto(data, coloring.decompress_data(B=b_one), where=one_sided_entries)
    if b_fwd is not None:
        assert forward is not None
        np.copyto(data, coloring.decompress_data(B=b_fwd),
                  where=forward[coloring.pattern.indices])
    scale = 2.0 * h if method == "3-point" else h
    if forward is not None:
        scale = np.where(forward, h, scale)
    data /= scale[coloring.pattern.indices]
    return data


def check_complex_step_of(fun: Callable[[np.ndarray], Any], x: np.ndarray, h: np.ndarray,
                          cols: np.ndarray, b0: np.ndarray, n_out: int) -> None:
    """Refuse a complex step that ``fun`` does not carry: ``b0`` against real steps.

    ``b0`` is the imaginary part of ``fun`` at ``x + i dx`` (``dx`` = ``h`` on ``cols``, the
    first colour's columns): ``J dx`` where ``fun`` is analytic. ``np.abs``, ``np.real``,
    ``np.conj`` or ``np.linalg.norm`` of the complex argument drop or flip the imaginary part
    and leave entries zero or negated, with nothing to show for it in the output's dtype.
    The real differences along ``dx`` (central, then forward and backward, which a kink at
    ``x`` matches) must agree with it to about a thousandth, or a ``ValueError`` says so.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsejac.fd import check_complex_step_of
    >>> x, h, cols = np.array([0.5, -2.0]), np.full(2, 1e-8), np.arange(2)
    >>> check_complex_step_of(lambda z: z ** 2, x, h, cols, np.imag((x + 1j * h) ** 2), 2)
    >>> check_complex_step_of(np.abs, x, h, cols, np.imag(np.abs(x + 1j * h)), 2)
    Traceback (most recent call last):
        ...
    ValueError: fd_method='cs' (complex step) differentiates this f wrongly: ...
    """
    xf = x.ravel()
    dx = np.zeros(xf.size)
    dx[cols] = h[cols]

    def real_step(k: float) -> np.ndarray | None:
        try:  # (the complex step stays at x: a real one may leave f's domain, x >= 0 say)
            return _evaluate(fun, (xf + k * dx).reshape(x.shape), n_out)
        except Exception:
            return None

    up, down = real_step(1.0), real_step(-1.0)
    if up is None and down is None:
        return  # f is not defined a real step away on either side: nothing to compare with
    scale = 1e-11 * (1.0 + sum(np.abs(v) for v in (up, down) if v is not None))

    def off(d: np.ndarray) -> np.ndarray:
        far_off: np.ndarray = np.abs(b0 - d) > 1e-3 * np.maximum(np.abs(b0), np.abs(d)) + scale
        return far_off

    if up is None or down is None:  # one side: a forward difference, its error from 2 steps
        sign = 1.0 if up is not None else -1.0
        near, far = (up if up is not None else down), real_step(2.0 * sign)
        if far is None or near is None:
            return  # no second step to tell a forward difference's error: nothing to judge
        mid = _evaluate(fun, x, n_out)
        delta = sign * (near - mid)
        bad = off(delta) & (np.abs(b0 - delta) > 4 * np.abs(far - 2 * near + mid))
    else:
        delta = 0.5 * (up - down)
        bad = off(delta)
        if bad.any():  # a kink at x: the complex step takes one side's slope
            mid = _evaluate(fun, x, n_out)
            bad &= off(up - mid) & off(mid - down)
            # where f cancels, the real steps' rounding noise: seen at twice the step too
            up2, down2 = (real_step(2.0), real_step(-2.0)) if bad.any() else (None, None)
            if up2 is not None and down2 is not None:
                # (a dropped or flipped imaginary part leaves these small beside J dx)
                noise = np.maximum(np.abs(up - 2 * mid + down), np.abs(up2 - 2 * mid + down2))
                noise = np.maximum(noise, np.abs(0.5 * (up2 - down2) - (up - down)))
                bad &= np.abs(b0 - delta) > 2 * noise
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(
            f"fd_method='cs' (complex step) differentiates this f wrongly: along a step of "
            f"columns {cols[:5].tolist()}{' ...' if cols.size > 5 else ''}, output {i} changes "
            f"by {delta[i]:.3g} for a real step and by {b0[i]:.3g} for the "
            f"complex one ({int(bad.sum())} output(s) disagree). f does not carry the "
            "imaginary part through: np.abs, np.real, np.conj, np.linalg.norm or a comparison "
            "of the complex argument drop or flip it. Use the exact modes (the default mode) "
            "or fd_method='2-point' / '3-point'.")


def missing_entries(
    fun: Callable[[np.ndarray], Any],
    x: np.ndarray,
    coloring: ColoringResult,
    *,
    n_probes: int = 3,
    seed: int = 0,
    bounds: tuple[np.ndarray, np.ndarray] | None = None,
) -> tuple[list[tuple[int, int]], list[int]]:
    """Entries of the Jacobian that a trusted pattern misses, by a few dense probes.

    Forward differences along ``+v`` and ``-v`` for ``n_probes`` random dense directions
    ``v`` are compared with ``J_P v``, ``J_P`` the compressed (central) finite-difference
    Jacobian on the pattern; a row whose residual is beyond rounding, odd in ``v`` and of
    first order in the step (a step four times shorter) in every probe misses entries (a
    kink at ``x`` is even in ``v``; rounding noise does not shrink with the step). Their
    columns are found by ``ceil(log2 n)`` probes on the columns whose index has bit ``b``
    set (one missing column per row decodes exactly), each candidate confirmed by a probe
    along its own column. The cost is about ``2p + 1 + 4 n_probes + log2(n)`` evaluations of
    ``fun`` plus one per candidate. With ``bounds`` (flat ``(lb, ub)``) every probe stays
    within them: a probe's step turns back where it would leave them, and shortens where
    neither side has room; the probes then go along ``+v`` only.

    Returns
    -------
    (entries, rows)
        The confirmed missing entries ``(row, column)``, and the rows that miss entries whose
        columns could not be told apart (several in one row).

    Examples
    --------
    >>> import numpy as np
    >>> import sparsejac
    >>> from sparsejac.fd import missing_entries
    >>> f = lambda x: np.append(x[:-1] * x[1:], x[-1] ** 2 + x[0])   # entry (3, 0) hidden
    >>> c = sparsejac.color(np.eye(4) + np.eye(4, k=1), "column")
    >>> missing_entries(f, np.arange(1.0, 5.0), c)
    ([(3, 0)], [])
    """
    x = np.asarray(x, dtype=np.float64)
    xf = x.ravel()
    n = xf.size
    pattern = coloring.pattern
    m = pattern.shape[0]
    f0 = _evaluate(fun, x, m)
    eps = step_eps(f0.dtype)
    # central differences: the truncation error of one-sided ones (h H / 2 per column) would
    # leave a first-order residual in every row with second derivatives
    jp = fd_jacobian_data(fun, x, coloring, method="3-point", n_out=m, bounds=bounds)
    j_p = sp.csr_array((jp, pattern.indices, pattern.indptr), shape=pattern.shape)
    h = fd_steps(xf, "2-point", eps)
    scale = float(np.max(np.abs(f0), initial=0.0))
    rng = np.random.default_rng(seed)

    def residual(v: np.ndarray, shrink: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
        """f(x + h v) - f(x) - h J_P v per row (signed), and its rounding level."""
        dx = shrink * h * v
        if bounds is not None:  # turned back, or shortened, where it would leave them
            dx = bounded_steps(xf, dx, "2-point", *bounds)[0]
        z = xf + dx if bounds is None else np.clip(xf + dx, *bounds)  # (x + dx rounds)
        f1 = _evaluate(fun, z.reshape(x.shape), m)
        pred = j_p @ dx
        # rounding of the two evaluations, and the differences' relative truncation error
        tol = 1e-6 * np.abs(pred) + 100 * eps * (np.abs(f0) + np.abs(f1) + 1e-6 * scale)
        return f1 - f0 - pred, tol

    def probe(v: np.ndarray) -> np.ndarray:
        res, tol = residual(v)
        return np.asarray(np.abs(res) > tol, dtype=bool)

    def odd(v: np.ndarray, shrink: float = 1.0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The residual's parts odd and even in ``v``, and their rounding level."""
        plus, tol = residual(v, shrink)
        if bounds is not None:  # (-v would be turned back where v is: one side only)
            return plus, np.zeros_like(plus), tol
        minus, tol_minus = residual(-v, shrink)
        return 0.5 * (plus - minus), 0.5 * (plus + minus), np.maximum(tol, tol_minus)

    # A missing entry leaves a residual odd in the probe and of first order in the step, in
    # every probe. Not so: a kink at x (np.abs, np.maximum: even in the probe), a row whose
    # first-order change cancels (second order: 16 times smaller for a step 4 times
    # shorter), and rounding noise where f is small beside its terms (it does not shrink,
    # and its odd and even parts are alike).
    flagged = np.ones(m, dtype=bool)
    for _ in range(n_probes):
        v = rng.uniform(0.5, 1.5, n) * rng.choice([-1.0, 1.0], n)
        anti, even, tol = odd(v)
        bad = flagged & (np.abs(anti) > tol) & (np.abs(anti) > 2.0 * np.abs(even))
        if bad.any():
            ratio = np.abs(odd(v, 0.25)[0]) / np.where(bad, np.abs(anti), 1.0)
            bad &= (ratio > 1.0 / 8.0) & (ratio < 0.5)
        flagged = bad
        if not flagged.any():
            break
    rows = np.flatnonzero(flagged)
    if rows.size == 0:
        return [], []
    # Bit probes (v_j = 1 where bit b of j is set). The compressed differences attribute a
    # missing entry (i, j) to the pattern's entry (i, k) of j's colour, if row i has one, so
    # the residual of row i shows bit b of j XOR bit b of k: decode j for every such k.
    code = np.zeros(m, dtype=np.int64)
    for b in range(max(int(n - 1).bit_length(), 1)):
        bit = ((np.arange(n) >> b) & 1).astype(np.float64)
        code |= probe(bit).astype(np.int64) << b
    groups = coloring.column_groups
    assert groups is not None
    entries: list[tuple[int, int]] = []
    unresolved: list[int] = []
    unit: dict[int, np.ndarray] = {}
    for i in rows:
        present = pattern.indices[pattern.indptr[i]:pattern.indptr[i + 1]]
        found = []
        for k in [-1, *present.tolist()]:
            j = int(code[i]) ^ (0 if k < 0 else k)
            if j >= n or j in present or (k >= 0 and groups[j] != groups[k]):
                continue
            if j not in unit:
                unit[j] = probe(np.eye(1, n, j).ravel())
            if unit[j][i]:
                found.append(j)
        if found:
            entries.extend((int(i), j) for j in sorted(set(found)))
        else:
            unresolved.append(int(i))
    return entries, unresolved
