"""Numeric helpers shared by every layer that multiplies derivatives.

Owns the one convention of derivative accumulation that the primitives (rules), the eager
interpreters and the prepared engine must agree on: a structurally present but exactly zero
local derivative contributes nothing, even when the quantity it multiplies is not finite.
"""

from __future__ import annotations

import contextvars
import threading
import weakref
from typing import Any

import numpy as np

from sparsejac.kernels import kernel, use_fallback

__all__ = ["einsum0", "is_arange", "loud", "mul0", "quiet", "shared_arange", "sorted_unique"]

try:  # numpy's own floating-point error state (what np.errstate sets)
    from numpy._core import umath as _umath

    _extobj_contextvar: Any = _umath._extobj_contextvar
    _make_extobj: Any = _umath._make_extobj
except (ImportError, AttributeError):  # pragma: no cover - another numpy: np.errstate itself
    _extobj_contextvar = _make_extobj = None

#: (an error state, the same state ignoring every floating-point error), the last asked for
_QUIET: tuple[Any, Any] = (None, None)


def quiet() -> Any:
    """Ignore floating-point errors until :func:`loud` is given the token returned.

    ``np.errstate(all="ignore")`` for one call on a hot path (verify's evaluation of ``f``
    at every Jacobian): the same context variable set and reset, without building the
    context object and its state each time (0.3 against 1.5 microseconds). The state
    ignoring errors is derived from the caller's (its buffer size and error callback kept).

    Examples
    --------
    >>> import numpy as np
    >>> from sparsejac.numeric import loud, quiet
    >>> before = np.geterr()
    >>> token = quiet()
    >>> np.geterr()["invalid"], float(np.sqrt(np.array(-1.0)))
    ('ignore', nan)
    >>> loud(token)
    >>> np.geterr() == before
    True
    """
    global _QUIET
    if _extobj_contextvar is None:  # pragma: no cover - another numpy
        state = np.errstate(all="ignore")
        state.__enter__()
        return state
    current = _extobj_contextvar.get()
    hit = _QUIET
    if hit[0] is not current:
        hit = (current, _make_extobj(all="ignore"))
        _QUIET = hit  # (one tuple, replaced whole: any thread sees a consistent pair)
    return _extobj_contextvar.set(hit[1])


def loud(token: Any) -> None:
    """Restore the floating-point error state :func:`quiet` replaced.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsejac.numeric import loud, quiet
    >>> with np.errstate(divide="raise"):
    ...     token = quiet()
    ...     _ = np.log(np.zeros(1))      # ignored
    ...     loud(token)
    ...     np.geterr()["divide"]
    'raise'
    """
    if isinstance(token, np.errstate):  # pragma: no cover - another numpy
        token.__exit__(None, None, None)
    else:
        _extobj_contextvar.reset(token)


#: Set by a walk that checks its result (:class:`~sparsejac.ad.InterpretedLinearization`):
#: :func:`mul0` is then a plain product. A product it would have mended (zero times inf or
#: nan) is NaN in the plain one and stays NaN through every linear operation that reads it,
#: so a finite result had none on its way, and a non-finite one is computed again with it.
_PLAIN_PRODUCTS: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "sparsejac_plain_products", default=False)


def mul0(a: Any, b: Any) -> Any:
    """``a * b`` with the convention ``0 · inf = 0 · nan = 0`` of derivative accumulation.

    A path whose local derivative is exactly zero contributes nothing, even when another
    factor on it is not finite: ``np.where(x > 0, np.sqrt(x), 0)`` has derivative 0 at
    negative x (the untaken branch's NaN is multiplied by the zero derivative of ``where``),
    and ``x * np.sqrt(x)`` has derivative 0 at 0. Finite products are untouched, and the
    check costs one reduction.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsejac.numeric import mul0
    >>> mul0(np.array([0.0, 2.0, 0.0]), np.array([np.nan, 3.0, np.inf]))
    array([0., 6., 0.])
    """
    if _PLAIN_PRODUCTS.get():
        return np.multiply(a, b)
    with np.errstate(invalid="ignore", over="ignore"):  # once: the product and its check
        out = np.multiply(a, b)
        if np.ndim(out) == 0:
            if np.isfinite(out) or (np.all(np.not_equal(a, 0)) and np.all(np.not_equal(b, 0))):
                return out
            return np.zeros_like(out)
        finite = np.isfinite(np.sum(out))
    if finite:
        return out
    zero = np.equal(a, 0) | np.equal(b, 0)
    if np.any(zero):
        out = np.where(np.broadcast_to(zero, out.shape) & ~np.isfinite(out), 0.0, out)
    return out


def einsum0(subscripts: str, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``np.einsum(subscripts, a, b)`` with every product taken as :func:`mul0` takes it.

    The same as ``mul0`` of the broadcast operands summed over the contracted indices, without
    that product array: a tangent block times a lane Jacobian with an overflowed entry
    (``np.cumprod`` of 1,000 elements in a Hessian, 1,000 directions) would otherwise be
    ``10^9`` products. Finite operands take one ``einsum``; otherwise the finite parts are
    contracted, and the non-finite products are counted by sign (``+inf``, ``-inf``, NaN)
    with ``einsum`` over indicator arrays: a sum with an infinite product is that infinity,
    with infinities of both signs or a NaN product it is NaN.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsejac.numeric import einsum0
    >>> d = np.array([[np.inf, 1.0], [2.0, 3.0]])
    >>> einsum0("kj,j->k", d, np.array([0.0, 1.0]))  # inf times a zero tangent: nothing
    array([1., 3.])
    >>> einsum0("kj,j->k", d, np.array([-1.0, 1.0]))
    array([-inf,   1.])
    """
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    fin_a, fin_b = np.isfinite(a), np.isfinite(b)
    if fin_a.all() and fin_b.all():
        return np.asarray(np.einsum(subscripts, a, b))
    with np.errstate(invalid="ignore", over="ignore"):
        res = np.asarray(np.einsum(subscripts, np.where(fin_a, a, 0.0), np.where(fin_b, b, 0.0)))
        counts = {"plus": np.zeros(res.shape), "minus": np.zeros(res.shape),
                  "nan": np.zeros(res.shape)}

        def count(kind: str, x: np.ndarray, y: np.ndarray) -> None:
            if x.any() and y.any():
                counts[kind] += np.einsum(subscripts, x.astype(np.float64),
                                          y.astype(np.float64))

        pos_a, neg_a, pos_b, neg_b = a > 0, a < 0, b > 0, b < 0
        inf_a, ninf_a, inf_b, ninf_b = a == np.inf, a == -np.inf, b == np.inf, b == -np.inf
        count("plus", inf_a, pos_b)
        count("plus", ninf_a, neg_b)
        count("plus", pos_a & fin_a, inf_b)
        count("plus", neg_a & fin_a, ninf_b)
        count("minus", inf_a, neg_b)
        count("minus", ninf_a, pos_b)
        count("minus", pos_a & fin_a, ninf_b)
        count("minus", neg_a & fin_a, inf_b)
        nan_a = np.isnan(a)
        count("nan", nan_a, b != 0)  # (b != 0 holds for a NaN b)
        count("nan", (a != 0) & ~nan_a, np.isnan(b))
    plus, minus = counts["plus"] > 0, counts["minus"] > 0
    res = np.where(plus, np.inf, np.where(minus, -np.inf, res))
    out: np.ndarray = np.where((counts["nan"] > 0) | (plus & minus), np.nan, res)
    return out


@kernel()
def _is_range(a):  # type: ignore[no-untyped-def]  # pragma: no cover - compiled
    """Whether ``a[i] == i`` for every ``i`` (one pass, no temporary)."""
    for i in range(a.size):  # noqa: SIM110 - a compiled loop (numba has no generator all())
        if a[i] != i:
            return False
    return True


def is_arange(a: np.ndarray | None, n: int) -> bool:
    """Whether ``a`` is ``0, 1, ..., n-1`` (an index array that can be dropped).

    The ends answer most "no"s without a pass; a "yes" takes one compiled pass and no
    ``arange`` of ``n`` elements (a numpy comparison for small inputs, or while numba is not
    loaded: :func:`sparsejac.kernels.use_fallback`).

    Examples
    --------
    >>> import numpy as np
    >>> from sparsejac.numeric import is_arange
    >>> is_arange(np.arange(5), 5), is_arange(np.array([0, 2, 1, 3]), 4), is_arange(None, 0)
    (True, False, False)
    >>> is_arange(shared_arange(1000), 1000)     # the shared one: no pass over it
    True
    """
    if a is None or a.size != n:
        return False
    if n == 0 or _is_shared_arange(a, n):
        return True
    flat = a.reshape(-1)
    if flat[0] != 0 or flat[n - 1] != n - 1:  # the usual "no", without a pass
        return False
    if n <= 64 or use_fallback(n):
        return bool(np.array_equal(flat, np.arange(n)))
    return bool(_is_range(flat))


_ARANGES: dict[int, weakref.ref[np.ndarray]] = {}
_ARANGES_LOCK = threading.Lock()


def _read_only_arange(n: int) -> np.ndarray:
    a = np.arange(n, dtype=np.int64)
    a.setflags(write=False)
    return a


_SMALL_ARANGES = [_read_only_arange(n) for n in range(17)]


def _is_shared_arange(a: np.ndarray, n: int) -> bool:
    """Whether ``a`` is :func:`shared_arange`'s array of ``n`` (no pass over it)."""
    if a.flags.writeable:
        return False
    if n < len(_SMALL_ARANGES):
        return a is _SMALL_ARANGES[n]
    ref = _ARANGES.get(n)
    return ref is not None and ref() is a


def shared_arange(n: int) -> np.ndarray:
    """``np.arange(n)`` as int64, read-only, one array shared by every caller while alive.

    The diagonal local Jacobians of a program's elementwise nodes all index ``0..n-1``;
    sharing one read-only array instead of allocating one per node spares a detection or a
    preparation an nnz-sized allocation (and its fresh pages) per node. The cache holds the
    arrays weakly: an array lives as long as something uses it.

    Examples
    --------
    >>> from sparsejac.numeric import shared_arange
    >>> a = shared_arange(4)
    >>> a.tolist(), a.flags.writeable, shared_arange(4) is a
    ([0, 1, 2, 3], False, True)
    """
    if n < len(_SMALL_ARANGES):  # the scalar nodes of element loops: no lock, no lookup
        return _SMALL_ARANGES[n]
    with _ARANGES_LOCK:
        ref = _ARANGES.get(n)
        a = ref() if ref is not None else None
        if a is None:
            a = np.arange(n, dtype=np.int64)
            a.setflags(write=False)
            if len(_ARANGES) >= 64:  # drop the entries whose arrays are gone
                for k in [k for k, r in _ARANGES.items() if r() is None]:
                    del _ARANGES[k]
            _ARANGES[n] = weakref.ref(a)
        return a


def sorted_unique(a: np.ndarray) -> np.ndarray:
    """The sorted distinct values of an integer array: ``np.unique(a)``, by a sort.

    numpy 2's ``np.unique`` (and ``np.union1d``, which calls it) finds the distinct values of
    integers with a hash table, 50-100 times slower than a sort and one pass on millions of
    keys (1.5 s against 0.015 s for 10^6 keys with numpy 2.4).

    Examples
    --------
    >>> import numpy as np
    >>> from sparsejac.numeric import sorted_unique
    >>> sorted_unique(np.array([3, 1, 3, 2, 1])).tolist()
    [1, 2, 3]
    """
    s = np.sort(np.asarray(a).ravel(), kind="stable")  # (runs: concatenated sorted sets)
    if s.size < 2:
        return s
    keep = np.empty(s.size, dtype=bool)
    keep[0] = True
    np.not_equal(s[1:], s[:-1], out=keep[1:])
    return s[keep]
