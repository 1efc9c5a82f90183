"""Argument validation of the Jacobian entry points, in one place.

Every public entry point (:func:`sparsejac.jacobian`, :class:`sparsejac.SparseJacobian`, the
solver adapters, the reports) checks its arguments here, so each argument has one rule and one
message: the argument in backticks, what was received, what is allowed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Literal

import numpy as np
import scipy.sparse as sp

from sparsejac.coloring import check_reverse_cost
from sparsejac.fd import SharedMap, check_method, check_workers
from sparsejac.pattern import SparsityPattern
from sparsejac.tracing import as_float_input, check_args, check_kwargs

__all__ = [
    "ENGINES",
    "MAX_COMPRESSED_ENTRIES",
    "MODES",
    "Mode",
    "check_args",
    "check_callable",
    "check_compressed_size",
    "check_engine",
    "check_fd_bounds",
    "check_fd_method",
    "check_fd_workers",
    "check_flag",
    "check_kwargs",
    "check_mode",
    "check_out_matrix",
    "check_params",
    "check_real",
    "check_reverse_cost",
    "check_subset",
    "check_within",
    "check_x",
    "fits_pattern",
    "function_label",
]

Mode = Literal["auto", "forward", "reverse", "mixed", "fd"]
#: The evaluation modes, in the order ``auto`` considers them (ties go to the earlier one).
MODES: tuple[str, ...] = ("auto", "forward", "reverse", "mixed", "fd")
#: Largest compressed matrix (``m × p`` or ``q × n`` entries) a mode may allocate (800 MB).
MAX_COMPRESSED_ENTRIES = 100_000_000


def check_mode(mode: Any) -> str:
    """``mode`` if it is one of :data:`MODES`, else a ValueError listing them.

    Examples
    --------
    >>> from sparsejac.validation import check_mode
    >>> check_mode("reverse")
    'reverse'
    """
    if not isinstance(mode, str) or mode not in MODES:
        raise ValueError(f"Unknown `mode` {mode!r}; expected one of {list(MODES)}.")
    return mode


#: How a prepared Jacobian evaluates its recorded program (see :func:`sparsejac.pipeline.prepare`).
ENGINES: tuple[str, ...] = ("auto", "tape", "chain")


def check_engine(engine: Any) -> str:
    """``engine`` if it is one of :data:`ENGINES`, else a ValueError listing them.

    Examples
    --------
    >>> from sparsejac.validation import check_engine
    >>> check_engine("tape")
    'tape'
    """
    if not isinstance(engine, str) or engine not in ENGINES:
        raise ValueError(f"Unknown `engine` {engine!r}; expected one of {list(ENGINES)}.")
    return engine


def check_fd_bounds(bounds: Any, x0: np.ndarray, mode: str, name: str = "x0"
                    ) -> tuple[np.ndarray, np.ndarray] | None:
    """``bounds`` as flat float64 ``(lb, ub)`` for ``mode="fd"``; None if there are none.

    Takes what ``scipy.optimize.least_squares`` takes: a pair ``(lb, ub)`` of scalars or
    arrays broadcastable to ``x0``'s shape (``±np.inf`` for no bound), or a
    ``scipy.optimize.Bounds``. Each lower bound must be below its upper bound and ``x0``
    within them.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsejac.validation import check_fd_bounds
    >>> check_fd_bounds((0.0, [1.0, np.inf]), np.array([0.5, 2.0]), "fd")
    (array([0., 0.]), array([ 1., inf]))
    >>> check_fd_bounds((0.0, 1.0), np.array([0.5, 2.0]), "fd")
    Traceback (most recent call last):
        ...
    ValueError: `x0` is outside `bounds` at index 1: 2.0 is not within [0.0, 1.0]
    """
    if bounds is None:
        return None
    if mode != "fd":
        raise ValueError(
            f"`bounds` apply to mode='fd' only (where finite differences may evaluate f); "
            f"mode={mode!r} is exact and evaluates f at x only. Drop `bounds`, or pass "
            "mode='fd'.")
    if hasattr(bounds, "lb") and hasattr(bounds, "ub"):  # scipy.optimize.Bounds
        bounds = (bounds.lb, bounds.ub)
    elif isinstance(bounds, np.ndarray) and bounds.ndim >= 1 and bounds.shape[0] == 2:
        bounds = (bounds[0], bounds[1])  # a (2, n) array, as least_squares takes
    if not isinstance(bounds, (tuple, list)) or len(bounds) != 2:
        raise TypeError(f"`bounds` must be a pair (lb, ub) or a scipy.optimize.Bounds; got "
                        f"{type(bounds).__name__}")
    pair = []
    for side, b in zip(("lb", "ub"), bounds, strict=True):
        try:
            arr = np.asarray(b, dtype=np.float64)
            if arr.ndim == 1 and arr.size == x0.size:  # flat, as least_squares' x
                arr = arr.reshape(x0.shape)
            pair.append(np.broadcast_to(arr, x0.shape).ravel().copy())
        except (TypeError, ValueError) as exc:
            raise ValueError(f"`bounds` {side} must be real numbers broadcastable to "
                             f"`{name}`'s shape {x0.shape}; got {np.shape(b)}") from exc
    lb, ub = pair
    bad = np.flatnonzero(~(lb < ub))
    if bad.size:
        i = int(bad[0])
        raise ValueError(f"`bounds`: each lower bound must be less than its upper bound; "
                         f"index {i} has [{lb[i]}, {ub[i]}]")
    check_within(x0, (lb, ub), name)
    if np.isinf(lb).all() and np.isinf(ub).all():
        return None
    return lb, ub


def check_within(x: np.ndarray, bounds: tuple[np.ndarray, np.ndarray], name: str,
                 given: str = "") -> None:
    """A ValueError naming ``name`` and the first element of ``x`` outside flat ``bounds``.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsejac.validation import check_within
    >>> check_within(np.array([0.5, 3.0]), (np.zeros(2), np.ones(2)), "x")
    Traceback (most recent call last):
        ...
    ValueError: `x` is outside `bounds` at index 1: 3.0 is not within [0.0, 1.0]
    """
    flat = x.ravel()
    lb, ub = bounds
    out = np.flatnonzero((flat < lb) | (flat > ub))
    if out.size:
        i = int(out[0])
        raise ValueError(f"`{name}` is outside {'the ' if given else ''}`bounds`{given} at "
                         f"index {i}: {flat[i]} is not within [{lb[i]}, {ub[i]}]")


def check_fd_workers(workers: Any, mode: str) -> Any:
    """``workers`` checked (:func:`sparsejac.fd.check_workers`), for ``mode="fd"`` only.

    Examples
    --------
    >>> from sparsejac.validation import check_fd_workers
    >>> check_fd_workers(2, "fd")
    2
    >>> check_fd_workers(None, "forward") is None  # the exact modes take no workers
    True
    """
    workers = check_workers(workers)
    if workers is not None and mode != "fd":
        raise ValueError(
            f"`workers` applies to mode='fd' (independent evaluations of f); mode={mode!r} "
            "computes its products in this process")
    return SharedMap(workers) if callable(workers) and not isinstance(workers, SharedMap) \
        else workers


def function_label(f: Any) -> str:
    """The name a repr shows for the user's function: its ``__name__``, or ``f`` for lambdas.

    Examples
    --------
    >>> from sparsejac.validation import function_label
    >>> function_label(function_label), function_label(lambda x: x)
    ('function_label', 'f')
    """
    label = getattr(f, "__name__", "")
    return label if isinstance(label, str) and label.isidentifier() else "f"


def check_callable(f: Any, x: Any = None, name: str = "f") -> Callable[..., Any]:
    """``f`` if it is callable; a TypeError that also spots swapped ``(x, f)`` arguments.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsejac.validation import check_callable
    >>> check_callable(np.ones(3), np.sin)
    Traceback (most recent call last):
        ...
    TypeError: `f` must be callable; got ndarray. The arguments look swapped: the function \
comes first, then the point: jacobian(f, x).
    """
    if callable(f):
        return f  # type: ignore[no-any-return]
    hint = ""
    if callable(x):
        hint = (" The arguments look swapped: the function comes first, then the point: "
                "jacobian(f, x).")
    raise TypeError(f"`{name}` must be callable; got {type(f).__name__}.{hint}")


def check_fd_method(fd_method: Any, mode: str) -> str:
    """The finite-difference scheme: ``"2-point"`` by default, only with ``mode="fd"``.

    Examples
    --------
    >>> from sparsejac.validation import check_fd_method
    >>> check_fd_method(None, "fd"), check_fd_method("3-point", "fd")
    ('2-point', '3-point')
    >>> check_fd_method("3-point", "forward")
    Traceback (most recent call last):
        ...
    ValueError: `fd_method` applies to mode='fd' only (finite differences); mode='forward' is \
exact and uses no step. Drop `fd_method`, or pass mode='fd'.
    """
    if fd_method is None:
        return "2-point"
    method = check_method(fd_method)
    if mode != "fd":
        raise ValueError(
            f"`fd_method` applies to mode='fd' only (finite differences); mode={mode!r} is "
            "exact and uses no step. Drop `fd_method`, or pass mode='fd'.")
    return method


def _kind(v: Any) -> str:
    """The dtype kind of ``v`` as a numpy array ("O" where it is none)."""
    try:
        return str(np.asarray(v).dtype.kind)
    except (TypeError, ValueError):
        return "O"


def check_params(params: Any, like: Sequence[Any] | None = None) -> tuple[Any, ...]:
    """``params`` as a tuple of real numbers or arrays, or a clear error naming it.

    With ``like`` (the values a Jacobian was prepared with), each must have the shape of its
    counterpart, the shapes the recorded program holds for (a one-element array for a
    number, and the reverse, passes: its values are the same).

    Examples
    --------
    >>> from sparsejac.validation import check_params
    >>> check_params([0.5, (1.0, 2.0)])
    (0.5, (1.0, 2.0))
    >>> check_params(3.0)
    Traceback (most recent call last):
        ...
    TypeError: `params` must be a sequence (a tuple of the traced parameters, e.g. (t,)); got float
    """
    if isinstance(params, (str, bytes)) or not isinstance(params, Sequence):
        raise TypeError("`params` must be a sequence (a tuple of the traced parameters, e.g. "
                        f"(t,)); got {type(params).__name__}")
    for i, p in enumerate(params):
        if _kind(p) not in "biuf":
            raise TypeError(f"`params[{i}]` must be a real number or array; got "
                            f"{type(p).__name__} {p!r}"[:200])
    if like is not None:
        if len(params) != len(like):
            raise ValueError(f"`params` has {len(params)} values; this was prepared with "
                             f"{len(like)}")
        for i, (p, q) in enumerate(zip(params, like, strict=True)):
            if np.shape(p) != np.shape(q) and not (np.size(p) == 1 == np.size(q)):
                raise ValueError(
                    f"`params[{i}]` has shape {np.shape(p)}; this was prepared with shape "
                    f"{np.shape(q)}, and its recorded program holds for that shape only: "
                    "prepare again for parameters of another shape")
    return tuple(params)


def check_flag(value: Any, name: str) -> bool:
    """``value`` as a bool, refusing what is not one (``verify="no"`` would be true).

    Examples
    --------
    >>> from sparsejac.validation import check_flag
    >>> check_flag(False, "verify")
    False
    >>> check_flag("no", "verify")
    Traceback (most recent call last):
        ...
    TypeError: `verify` must be True or False; got str 'no'
    """
    if not isinstance(value, (bool, np.bool_, int)) or isinstance(value, np.ndarray):
        raise TypeError(f"`{name}` must be True or False; got {type(value).__name__} "
                        f"{value!r:.60}")
    return bool(value)


def check_real(v: Any, name: str, size: int, of: str = "") -> np.ndarray:
    """``v`` as ``size`` finite float64 values (any shape), or a clear error naming it.

    Examples
    --------
    >>> from sparsejac.validation import check_real
    >>> check_real([1, 2], "v", 2)
    array([1., 2.])
    >>> check_real(None, "obj_factor", 1)
    Traceback (most recent call last):
        ...
    TypeError: `obj_factor` must be 1 finite real number; got NoneType None
    """
    want = f"{size} finite real number{'s' if size != 1 else ''}"
    if _kind(v) not in "biuf":
        raise TypeError(f"`{name}` must be {want}; got {type(v).__name__} {v!r:.60}")
    a = np.asarray(v)
    if a.size != size:
        raise ValueError(f"`{name}` has {a.size} values (shape {a.shape}); expected {size}{of}")
    a = a.astype(np.float64)
    if not np.all(np.isfinite(a)):
        raise ValueError(f"`{name}` must be {want}; got NaN or infinity at "
                         f"{np.flatnonzero(~np.isfinite(a.reshape(-1)))[:5].tolist()}")
    return a


def check_out_matrix(out: Any, pattern: Any, format: str = "csr", *,
                     fits: tuple[Any, ...] | None = None) -> None:
    """Refuse an ``out=`` that a prepared Jacobian of ``pattern`` cannot refill in place.

    It must be a writeable float64 ``csr_array`` (``format="csr"``). Given ``fits`` (the
    patterns of the plans a call used, before and after it), it must also have one of their
    structures (:func:`fits_pattern`): one whose structure was changed since it was returned
    (``eliminate_zeros()``) would otherwise be left alone and a new matrix returned, which a
    caller relying on ``out`` being refilled would not see.

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> from sparsejac.pattern import as_pattern
    >>> from sparsejac.validation import check_out_matrix
    >>> eye = as_pattern(np.eye(2))
    >>> check_out_matrix(sp.csr_array(np.eye(2)), eye, fits=(eye,))
    >>> check_out_matrix(sp.csr_array(np.diag([1.0, 0.0])), eye, fits=(eye,))
    Traceback (most recent call last):
        ...
    ValueError: `out` does not have this Jacobian's structure (1 stored entries, 2 expected): ...
    """
    if not (format == "csr" and isinstance(out, sp.csr_array) and out.shape == pattern.shape
            and out.dtype == np.float64 and out.data.flags.writeable):
        raise ValueError("`out` must be a csr_array returned by this SparseJacobian "
                         f"(shape {pattern.shape}, float64, writeable data)")
    if fits is not None and not any(fits_pattern(out, p) for p in fits):
        raise ValueError(
            f"`out` does not have this Jacobian's structure ({out.nnz} stored entries, "
            f"{pattern.nnz} expected): a matrix whose structure was changed (eliminate_zeros, "
            "a new sparsity) or one returned before a preparation that changed the structure; "
            "pass the matrix the last call returned, or no `out`")


def fits_pattern(out: Any, pattern: Any) -> bool:
    """Whether the matrix ``out`` has ``pattern``'s structure (one returned for it).

    What ``out=`` of a prepared Jacobian must be: its values are written in ``pattern``'s
    order, so another structure with as many nonzeros would take them at the wrong places.

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> from sparsejac.pattern import as_pattern
    >>> from sparsejac.validation import fits_pattern
    >>> fits_pattern(sp.csr_array(np.eye(2)), as_pattern(np.eye(2)))
    True
    >>> fits_pattern(sp.csr_array(np.eye(2)[::-1]), as_pattern(np.eye(2)))
    False
    """
    return bool(out.shape == pattern.shape and out.nnz == pattern.nnz and np.array_equal(
        out.indptr, pattern.indptr) and np.array_equal(out.indices, pattern.indices))


def check_x(x: Any, shape: tuple[int, ...] | None = None, name: str = "x", *,
            of: str = "this Jacobian", x0_name: str = "x0") -> np.ndarray:
    """``x`` as a fresh float64 array of ``shape`` (a flat vector of its size is reshaped).

    Examples
    --------
    >>> import numpy as np
    >>> from sparsejac.validation import check_x
    >>> check_x([1, 2, 3, 4], (2, 2)).shape
    (2, 2)
    >>> check_x(np.ones(3), (2, 2))
    Traceback (most recent call last):
        ...
    ValueError: `x` has shape (3,) but this Jacobian was prepared for `x0` of shape (2, 2)
    """
    arr = as_float_input(x, name)
    if shape is None or arr.shape == shape:
        return arr
    if arr.ndim == 1 and arr.size == int(np.prod(shape, dtype=np.int64)):
        return arr.reshape(shape)
    raise ValueError(
        f"`{name}` has shape {arr.shape} but {of} was prepared for `{x0_name}` of shape "
        f"{shape}")


def check_compressed_size(mode: str, shape: tuple[int, int], p: int, q: int) -> None:
    """Refuse a mode whose compressed blocks (``m × p``, ``q × n``) would be too large.

    Raises
    ------
    MemoryError
        Naming the mode, the sizes and the modes that avoid it.

    Examples
    --------
    >>> from sparsejac.validation import check_compressed_size
    >>> check_compressed_size("forward", (10, 10), 3, 0)
    >>> check_compressed_size("forward", (10**6, 10**6), 10**6, 0)
    Traceback (most recent call last):
        ...
    MemoryError: mode='forward' would allocate a compressed matrix of 1,000,000,000,000 ...
    """
    m, n = shape
    if m * p > MAX_COMPRESSED_ENTRIES or q * n > MAX_COMPRESSED_ENTRIES:
        raise MemoryError(
            f"mode={mode!r} would allocate a compressed matrix of {max(m * p, q * n):,} "
            f"entries ({p} forward and {q} reverse products on a {m}x{n} Jacobian); use "
            "mode='auto' or another mode (a dense row needs reverse or mixed mode, a dense "
            "column forward or mixed mode)")


def check_subset(detected: sp.csr_array, user: SparsityPattern) -> None:
    """Refuse a user pattern that misses dependencies the trace found (it would be wrong).

    Raises
    ------
    ValueError
        A wrong shape, or the first missing entry and how many are missing.

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> from sparsejac.pattern import as_pattern
    >>> from sparsejac.validation import check_subset
    >>> check_subset(sp.csr_array(np.eye(2)), as_pattern(np.ones((2, 2))))
    >>> check_subset(sp.csr_array(np.ones((2, 2))), as_pattern(np.eye(2)))
    Traceback (most recent call last):
        ...
    ValueError: `sparsity` misses 2 entries that f depends on (the trace found them), e.g. ...
    """
    if detected.shape != user.shape:
        raise ValueError(
            f"`sparsity` has shape {user.shape} but the Jacobian of f has shape {detected.shape}")
    missing = sp.csr_array(
        (detected.astype(np.int8) - user.to_csr_array().astype(np.int8)) > 0)
    if missing.nnz:
        rows, cols = missing.nonzero()
        raise ValueError(
            f"`sparsity` misses {missing.nnz} entries that f depends on (the trace found them), "
            f"e.g. ({int(rows[0])}, {int(cols[0])}); a compressed Jacobian with it would be "
            "wrong. Pass a superset, or omit `sparsity` to use the detected pattern.")
