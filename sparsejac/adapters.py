"""Drop-in ``jac=`` callables for scipy's solvers, built on :class:`sparsejac.SparseJacobian`.

* :func:`ode_jacobian` -- ``jac(t, y)`` for ``scipy.integrate.solve_ivp`` (``t`` traced, so one
  preparation serves the whole integration);
* :func:`least_squares_jacobian` -- ``jac(x, *args, **kwargs)`` for
  ``scipy.optimize.least_squares``;
* :func:`root_jacobian` -- ``jac(x, *args)`` for ``scipy.optimize.root`` (dense, as MINPACK
  needs).

They use only the public members of :class:`~sparsejac.SparseJacobian`, so their ``sparsity``
is always the one in use.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import scipy.sparse as sp

from sparsejac.sparse_jacobian import SparseJacobian
from sparsejac.validation import check_args, check_callable

__all__ = [
    "OdeJacobian",
    "RootJacobian",
    "least_squares_jacobian",
    "ode_jacobian",
    "root_jacobian",
]


class _StateFirst:
    """``fun(t, y, *a)`` called as ``g(y, t, *a)`` (the state is what is differentiated).

    A class rather than a lambda, so that an adapter pickles when ``fun`` does.
    """

    __slots__ = ("fun",)

    def __init__(self, fun: Callable[..., Any]) -> None:
        self.fun = fun

    def __call__(self, y: Any, t: Any, *args: Any) -> Any:
        return self.fun(t, y, *args)

    def __reduce__(self) -> tuple[Any, ...]:
        return (_StateFirst, (self.fun,))


def _time(t: Any, name: str) -> float:
    try:
        return float(t)
    except (TypeError, ValueError):
        raise TypeError(f"`{name}` must be a real number (the time); got {type(t).__name__}"
                        ) from None


class OdeJacobian:
    """``jac(t, y)`` for ``scipy.integrate.solve_ivp``, prepared once.

    Build it with :func:`ode_jacobian`. ``t`` is traced as a parameter (not baked in), so
    one preparation serves the whole integration.

    Attributes
    ----------
    sparsity : scipy.sparse.csr_array of bool
        The pattern, for ``solve_ivp(..., jac_sparsity=...)`` if you compare.
    prepared : SparseJacobian
        The underlying prepared Jacobian (``stats()``, ``mode``, ``n_products``).

    Examples
    --------
    >>> import numpy as np
    >>> import sparsejac
    >>> def rhs(t, y):
    ...     return -y + np.cos(t) * np.roll(y, 1)
    >>> jac = sparsejac.ode_jacobian(rhs, 0.0, np.ones(4), mode="forward")
    >>> jac
    OdeJacobian(SparseJacobian(rhs, shape=(4, 4), nnz=8, mode='forward': 2 JVPs instead of 4))
    >>> jac(np.pi, np.ones(4)).toarray()        # t is traced: cos(pi) = -1 here
    array([[-1.,  0.,  0., -1.],
           [-1., -1.,  0.,  0.],
           [ 0., -1., -1.,  0.],
           [ 0.,  0., -1., -1.]])
    """

    def __init__(self, fun: Callable[..., Any], t0: float, y0: Any, args: tuple[Any, ...] = (),
                 **options: Any) -> None:
        fun = check_callable(fun, y0, name="fun")
        self.prepared = SparseJacobian(
            _StateFirst(fun), y0, params=(_time(t0, "t0"),),
            args=check_args(args), name=str(getattr(fun, "__name__", "fun")), **options)

    @property
    def sparsity(self) -> sp.csr_array:
        """The pattern in use (it follows a new preparation with other ``args``)."""
        return self.prepared.sparsity

    def __call__(self, t: float, y: Any, *args: Any) -> sp.csr_array:
        """The Jacobian ``d fun(t, y, *args) / dy``.

        ``solve_ivp(..., args=args)`` passes its ``args`` here too: the preparation's own
        objects reuse it, other objects prepare again.
        """
        return self.prepared.evaluate(y, params=(_time(t, "t"),), args=args or None)

    def __repr__(self) -> str:
        return f"OdeJacobian({self.prepared!r})"


def ode_jacobian(fun: Callable[..., Any], t0: float, y0: Any, args: tuple[Any, ...] = (),
                 **options: Any) -> OdeJacobian:
    """An exact sparse ``jac(t, y)`` for ``scipy.integrate.solve_ivp``.

    Parameters
    ----------
    fun : callable
        The right-hand side ``fun(t, y, *args)``, written with numpy.
    t0 : float
        Initial time (a representative value of ``t``).
    y0 : array_like
        Initial state.
    args : tuple
        Extra arguments, as given to ``solve_ivp(..., args=args)``.
    **options
        Passed to :class:`SparseJacobian` (``mode``, ``order``, ``sparsity`` ...).

    Returns
    -------
    OdeJacobian
        Callable ``(t, y) -> csr_array``, with a ``sparsity`` attribute.

    Notes
    -----
    ``t`` is traced: the right-hand side may use it in numpy expressions (``np.where(t > 1,
    ...)``) but not in Python ``if`` statements (that would make the pattern depend on t).

    Examples
    --------
    >>> import numpy as np
    >>> from scipy.integrate import solve_ivp
    >>> import sparsejac
    >>> def rhs(t, y):
    ...     dy = -y ** 3
    ...     dy[1:] += y[:-1]
    ...     return dy
    >>> jac = sparsejac.ode_jacobian(rhs, 0.0, np.ones(50))
    >>> sol = solve_ivp(rhs, (0, 1), np.ones(50), method="BDF", jac=jac)
    >>> sol.success, sol.njev >= 1
    (True, True)
    """
    return OdeJacobian(fun, t0, y0, args, **options)


def least_squares_jacobian(fun: Callable[..., Any], x0: Any, args: tuple[Any, ...] = (),
                           kwargs: dict[str, Any] | None = None,
                           **options: Any) -> SparseJacobian:
    """An exact sparse ``jac(x, *args, **kwargs)`` for ``scipy.optimize.least_squares``.

    Parameters
    ----------
    fun : callable
        Residuals ``fun(x, *args, **kwargs)``, written with numpy.
    x0 : array_like
        Initial guess.
    args, kwargs : optional
        As given to ``least_squares``.
    **options
        Passed to :class:`SparseJacobian`.

    Returns
    -------
    SparseJacobian

    Examples
    --------
    >>> import numpy as np
    >>> from scipy.optimize import least_squares
    >>> import sparsejac
    >>> def broyden(x):  # Broyden's tridiagonal function
    ...     r = (3 - 2 * x) * x + 1
    ...     r[1:] -= x[:-1]
    ...     r[:-1] -= 2 * x[1:]
    ...     return r
    >>> jac = sparsejac.least_squares_jacobian(broyden, -np.ones(20))
    >>> jac.n_products
    3
    >>> res = least_squares(broyden, -np.ones(20), jac=jac)
    >>> bool(res.success), bool(np.abs(broyden(res.x)).max() < 1e-8)
    (True, True)
    """
    return SparseJacobian(fun, x0, args=check_args(args), kwargs=kwargs,
                          name=str(getattr(fun, "__name__", "fun")), **options)


class RootJacobian:
    """``jac(x, *args)`` for ``scipy.optimize.root``, prepared once, returning a dense array.

    Build it with :func:`root_jacobian`. The methods of ``root`` that use a Jacobian
    (``hybr``, ``lm``: MINPACK) need a dense ``ndarray``, so each call evaluates the sparse
    Jacobian and densifies it.

    Attributes
    ----------
    sparsity : scipy.sparse.csr_array of bool
        The pattern.
    prepared : SparseJacobian
        The underlying prepared Jacobian (``stats()``, ``mode``, ``n_products``); call it for
        the sparse matrix.

    Examples
    --------
    >>> import numpy as np
    >>> import sparsejac
    >>> def fun(x):
    ...     return x ** 2 - np.roll(x, 1)
    >>> jac = sparsejac.root_jacobian(fun, np.ones(3))
    >>> jac(np.arange(3.0))                       # dense, as MINPACK needs
    array([[ 0.,  0., -1.],
           [-1.,  2.,  0.],
           [ 0., -1.,  4.]])
    >>> jac.prepared(np.arange(3.0)).nnz          # the sparse matrix
    6
    """

    def __init__(self, prepared: SparseJacobian) -> None:
        self.prepared = prepared

    @property
    def sparsity(self) -> sp.csr_array:
        """The pattern in use (it follows a new preparation with other ``args``)."""
        return self.prepared.sparsity

    def __call__(self, x: Any, *args: Any) -> np.ndarray:
        """The Jacobian at ``x`` as a dense array (``args`` as for :class:`SparseJacobian`)."""
        dense: np.ndarray = self.prepared(x, *args).toarray()
        return dense

    def __repr__(self) -> str:
        return f"RootJacobian({self.prepared!r})"


def root_jacobian(fun: Callable[..., Any], x0: Any, args: tuple[Any, ...] = (),
                  **options: Any) -> RootJacobian:
    """An exact ``jac(x, *args)`` for ``scipy.optimize.root``.

    Parameters
    ----------
    fun : callable
        ``fun(x, *args)``, written with numpy.
    x0 : array_like
        Initial guess.
    args : tuple
        As given to ``root``.
    **options
        Passed to :class:`SparseJacobian`.

    Returns
    -------
    RootJacobian
        Callable ``(x, *args) -> ndarray``: ``root``'s ``hybr`` and ``lm`` methods (the ones
        that use ``jac``) need a dense matrix; the sparse one is ``jac.prepared(x, *args)``.

    Examples
    --------
    >>> import numpy as np
    >>> from scipy.optimize import root
    >>> import sparsejac
    >>> def fun(x, c):
    ...     return x ** 3 + np.roll(x, 1) - c
    >>> jac = sparsejac.root_jacobian(fun, np.ones(8), args=(2.0,))
    >>> sol = root(fun, np.zeros(8), args=(2.0,), jac=jac)
    >>> bool(sol.success), bool(np.allclose(sol.x, 1.0))
    (True, True)
    """
    return RootJacobian(SparseJacobian(fun, x0, args=check_args(args),
                                       name=str(getattr(fun, "__name__", "fun")), **options))
