"""Hessians of constrained problems: :func:`constraint_hessian` and :func:`lagrangian_hessian`.

Both are one :class:`~sparsejac.SparseHessian` of a scalar function with parameters: the
constraints weighted by multipliers ``v @ c(x)`` (the ``hess=`` of
``scipy.optimize.NonlinearConstraint``), and the Lagrangian ``σ f(x) + λᵀ c(x)`` (IPOPT's
``hessianstructure``/``hessian``), prepared once for every value of the multipliers.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import scipy.sparse as sp

from sparsejac.hessians import SparseHessian
from sparsejac.sparse_jacobian import bind_arguments
from sparsejac.validation import check_args, check_callable, check_kwargs, check_real, check_x

__all__ = ["ConstraintHessian", "LagrangianHessian", "constraint_hessian",
           "lagrangian_hessian"]


class _OneHessian:
    """What the constrained problems' Hessians share: one :class:`SparseHessian` inside."""

    hessian: SparseHessian

    def refresh(self) -> None:
        """Prepare again now, with the current values of what the functions read.

        As :meth:`SparseHessian.refresh <sparsejac.SparseHessian.refresh>`.

        Examples
        --------
        >>> import numpy as np
        >>> import sparsejac
        >>> w = np.array([1.0])
        >>> hess = sparsejac.constraint_hessian(lambda x: w * x ** 2, np.ones(1))
        >>> w[0] = 3.0
        >>> hess.refresh()
        >>> hess(np.ones(1), np.ones(1)).toarray()
        array([[6.]])
        """
        self.hessian.refresh()


class ConstraintHessian(_OneHessian):
    """``hess(x, v) = Σ_i v_i ∇² c_i(x)``: the ``hess=`` of ``scipy.optimize.NonlinearConstraint``.

    Built by :func:`constraint_hessian`; the multipliers ``v`` are parameters of one
    prepared Hessian (no new trace per call).

    Examples
    --------
    >>> import numpy as np
    >>> import sparsejac
    >>> hess = sparsejac.constraint_hessian(lambda x: x ** 2, np.ones(2))
    >>> hess(np.ones(2), np.array([1.0, -1.0])).toarray()
    array([[ 2.,  0.],
           [ 0., -2.]])
    """

    def __init__(self, hess: SparseHessian) -> None:
        self.hessian = hess

    def __call__(self, x: Any, v: Any) -> sp.csr_array:
        """The Hessian of ``v @ c(x)`` at ``x``."""
        m = int(np.size(self.hessian._params0[0]))
        return self.hessian.evaluate(x, params=(_multipliers(v, m, "v"),))

    def __repr__(self) -> str:
        return f"ConstraintHessian({self.hessian!r})"


def constraint_hessian(c: Callable[..., Any], x0: Any, *, args: tuple[Any, ...] = (),
                       kwargs: dict[str, Any] | None = None, method: str = "star",
                       name: str | None = None) -> ConstraintHessian:
    """The ``hess=`` of a ``NonlinearConstraint(c, lb, ub, jac=..., hess=...)``.

    Parameters
    ----------
    c : callable
        ``c(x, *args, **kwargs) -> array`` of the constraint values (m of them).
    x0 : array_like
        A representative point.
    args, kwargs, method, name : optional
        As for :class:`SparseHessian`.

    Returns
    -------
    ConstraintHessian
        ``hess(x, v)`` returns the sparse Hessian of ``v @ c(x)``.

    Examples
    --------
    >>> import numpy as np
    >>> import sparsejac
    >>> c = lambda x: np.array([x[0] * x[1], x[1] ** 2])
    >>> hess = sparsejac.constraint_hessian(c, np.ones(2))
    >>> hess(np.ones(2), np.array([1.0, 3.0])).toarray()
    array([[0., 1.],
           [1., 6.]])
    """
    fn = check_callable(c, x0, name="c")
    xa = check_x(x0, name="x0")
    call = bind_arguments(fn, check_args(args), check_kwargs(kwargs))
    m = int(np.asarray(call(xa.copy())).size)

    label = name or getattr(c, "__name__", "c")
    return ConstraintHessian(SparseHessian(_Weighted(call), xa, method=method,
                                           params=(np.ones(m),), name=f"v @ {label}(x)"))


class _Weighted:
    """``v @ c(x)`` (a class, so that a constraint Hessian pickles when ``c`` does)."""

    def __init__(self, c: Callable[..., Any]) -> None:
        self.c = c

    def __call__(self, x: Any, v: Any) -> Any:
        return np.sum(v * np.ravel(self.c(x)))


class _Lagrangian:
    """``sigma f(x) + lam @ c(x)`` (a class, so that it pickles when ``f`` and ``c`` do)."""

    def __init__(self, f: Callable[..., Any], c: Callable[..., Any]) -> None:
        self.f, self.c = f, c

    def __call__(self, x: Any, sigma: Any, lam: Any) -> Any:
        # f gets a copy: an f that writes into its x (scipy hands it a copy) must not shift
        # the x that c sees
        return sigma * self.f(np.copy(x)) + np.sum(lam * np.ravel(self.c(x)))


def _positions(rows: np.ndarray, cols: np.ndarray, r: np.ndarray, c: np.ndarray) -> np.ndarray:
    """Index in ``(rows, cols)`` of every entry ``(r, c)``; each must be among them."""
    width = int(max(np.max(cols, initial=0), np.max(c, initial=0))) + 1
    key = np.asarray(rows, dtype=np.int64) * width + cols
    want = np.asarray(r, dtype=np.int64) * width + c
    order = np.argsort(key, kind="stable")
    at = np.minimum(np.searchsorted(key[order], want), max(key.size - 1, 0))
    pos = order[at] if key.size else np.zeros(0, dtype=np.int64)
    if want.size and (key.size == 0 or not np.array_equal(key[pos], want)):
        raise RuntimeError("the constraints' Hessian has entries outside the Lagrangian's "
                           "structure")
    return np.asarray(pos)


def _multipliers(v: Any, m: int, name: str) -> np.ndarray:
    """``v`` as m float64 values, or an error naming the argument."""
    of = " (one per constraint)" if name != "obj_factor" else ""
    return check_real(v, name, m, of).reshape(m)


class LagrangianHessian(_OneHessian):
    """The Hessian of ``L(x) = σ f(x) + λᵀ c(x)`` for interior-point solvers.

    Built by :func:`lagrangian_hessian`. ``σ`` and ``λ`` are parameters of one prepared
    Hessian; :meth:`structure` gives the lower triangle once and :meth:`values` its values in
    that order (IPOPT's ``hessianstructure()`` and ``hessian(x, lagrange, obj_factor)``).

    Examples
    --------
    >>> import numpy as np
    >>> import sparsejac
    >>> hl = sparsejac.lagrangian_hessian(lambda x: np.sum(x ** 3), lambda x: x[:1] * x[1:],
    ...                                   np.ones(2))
    >>> hl(np.ones(2), lagrange=[2.0], obj_factor=1.0).toarray()
    array([[6., 2.],
           [2., 6.]])
    """

    #: σ = 0 with a NaN in σ ∇²f (a kink of f at x): the constraints' Hessian alone, prepared
    #: on first need, and the positions of its lower triangle in :meth:`structure` (a class
    #: default, so that an object pickled before this existed has it)
    _constraints: tuple[SparseHessian, np.ndarray] | None = None

    def __init__(self, hess: SparseHessian) -> None:
        self.hessian = hess

    def __call__(self, x: Any, lagrange: Any, obj_factor: float = 1.0) -> sp.csr_array:
        """The full symmetric Hessian of the Lagrangian."""
        params = self._params(lagrange, obj_factor)
        full = self.hessian.evaluate(x, params=params)
        if params[0] == 0 and np.isnan(full.data).any():
            rows, cols = self.hessian.structure()
            low = self._without_objective(x, params[1])
            r = np.repeat(np.arange(full.shape[0]), np.diff(full.indptr))
            c = full.indices
            full = full.copy()
            full.data = low[_positions(rows, cols, np.maximum(r, c), np.minimum(r, c))]
        return full

    def structure(self) -> tuple[np.ndarray, np.ndarray]:
        """``(rows, cols)`` of the lower triangle (``row >= col``)."""
        return self.hessian.structure()

    def values(self, x: Any, lagrange: Any, obj_factor: float = 1.0) -> np.ndarray:
        """The lower triangle's values in the order of :meth:`structure`.

        With ``obj_factor=0`` the objective takes no part, also where its Hessian is not
        defined (NaN, as for ``np.linalg.norm(x) ** 2`` at 0): IPOPT's restoration phase.
        """
        params = self._params(lagrange, obj_factor)
        vals = self.hessian.values(x, params=params)
        if params[0] == 0 and np.isnan(vals).any():
            return self._without_objective(x, params[1])
        return vals

    def _without_objective(self, x: Any, lam: np.ndarray) -> np.ndarray:
        """``λᵀ ∇²c(x)``'s lower triangle in the order of :meth:`structure`."""
        if self._constraints is None:
            lag = self.hessian._f
            assert isinstance(lag, _Lagrangian)
            hc = SparseHessian(_Weighted(lag.c), self.hessian._x0, method=self.hessian._method,
                               params=(np.ones(lam.size),), name="lagrange @ c(x)")
            rows, cols = self.hessian.structure()
            self._constraints = (hc, _positions(rows, cols, *hc.structure()))
        hc, pos = self._constraints
        out = np.zeros(self.hessian.structure()[0].size)
        out[pos] = hc.values(x, params=(lam,))
        return out

    def _params(self, lagrange: Any, obj_factor: float) -> tuple[Any, ...]:
        sigma = _multipliers(obj_factor, 1, "obj_factor")[0]
        m = int(np.size(self.hessian._params0[1]))
        return (sigma, _multipliers(lagrange, m, "lagrange"))

    def __repr__(self) -> str:
        return f"LagrangianHessian({self.hessian!r})"


def lagrangian_hessian(f: Callable[..., Any], c: Callable[..., Any], x0: Any, *,
                       method: str = "star", name: str | None = None) -> LagrangianHessian:
    """The Hessian of the Lagrangian ``σ f(x) + λᵀ c(x)``, prepared once for every ``σ, λ``.

    Parameters
    ----------
    f : callable
        The objective ``f(x)``, one element.
    c : callable
        The constraints ``c(x) -> array`` (m values).
    x0 : array_like
        A representative point.
    method, name : optional
        As for :class:`SparseHessian`.

    Returns
    -------
    LagrangianHessian

    Examples
    --------
    >>> import numpy as np
    >>> import sparsejac
    >>> f = lambda x: np.sum(x ** 2)
    >>> c = lambda x: np.array([x[0] * x[1]])
    >>> hl = sparsejac.lagrangian_hessian(f, c, np.ones(2))
    >>> hl.structure()
    (array([0, 1, 1]), array([0, 0, 1]))
    >>> hl.values(np.ones(2), lagrange=[3.0], obj_factor=0.5)
    array([1., 3., 1.])
    """
    fn = check_callable(f, x0)
    cn = check_callable(c, x0, name="c")
    xa = check_x(x0, name="x0")
    m = int(np.asarray(cn(xa.copy())).size)

    return LagrangianHessian(SparseHessian(_Lagrangian(fn, cn), xa, method=method,
                                           params=(np.float64(1.0), np.ones(m)),
                                           name=name or "lagrangian"))
