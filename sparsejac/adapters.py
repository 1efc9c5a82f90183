"""Drop-in ``jac=`` callables for scipy's solvers, built on :class:`sparsejac.SparseJacobian`.

* :func:`ode_jacobian` -- ``jac(t, y)`` for ``scipy.integrate.solve_ivp`` (``t`` traced, so one
  preparation serves the whole integration);
* :func:`least_squares_jacobian` -- ``jac(x, *args, **kwargs)`` for
  ``scipy.optimize.least_squares`` (dense for small problems, where its exact steps are
  cheap);
* :func:`root_jacobian` -- ``jac(x, *args)`` for ``scipy.optimize.root`` (dense, as MINPACK
  needs).

They use only the public members of :class:`~sparsejac.SparseJacobian`, so their ``sparsity``
is always the one in use.
"""

from __future__ import annotations

import inspect
import math
import sys
from collections.abc import Callable
from typing import Any

import numpy as np
import scipy.sparse as sp

from sparsejac.sparse_jacobian import SparseJacobian
from sparsejac.tracing import as_float_input
from sparsejac.validation import check_args, check_callable, check_x

__all__ = [
    "BvpJacobian",
    "LeastSquaresJacobian",
    "OdeJacobian",
    "RootJacobian",
    "bvp_jacobian",
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

    @property
    def __wrapped__(self) -> Callable[..., Any]:
        """``fun`` (what the verify watch follows to ``fun``'s globals)."""
        return self.fun

    def __call__(self, y: Any, t: Any, *args: Any) -> Any:
        return self.fun(t, y, *args)

    def __reduce__(self) -> tuple[Any, ...]:
        return (_StateFirst, (self.fun,))


def _time(t: Any, name: str) -> float:
    try:
        value = float(t)
    except (TypeError, ValueError, OverflowError):
        raise TypeError(f"`{name}` must be a real number (the time); got {type(t).__name__} "
                        f"{t!r:.40}") from None
    if not math.isfinite(value):
        raise ValueError(f"`{name}` must be finite (the time); got {value}")
    return value


#: Largest system for which :func:`ode_jacobian` returns dense Jacobians by default: scipy's
#: BDF and Radau factor a dense matrix faster than a sparse one there (``solve_ivp`` picks its
#: LU by the type ``jac`` returns; measured with ``benchmarks/solvers.py``: HIRES, n = 8,
#: Radau 42 -> 34 ms, POLLU, n = 20, Radau 19 -> 14 ms).
DENSE_ODE_MAX = 64


def _densify(prepared: SparseJacobian, x: Any, params: Any, args: Any, kwargs: Any,
             cached: tuple[Any, np.ndarray] | None
             ) -> tuple[np.ndarray, tuple[Any, np.ndarray]]:
    """J at ``x`` as a dense array, from its values and the plan that computed them.

    Also returns the values' flat positions, kept per plan (a new preparation makes new ones;
    another thread may switch the current one to another branch meanwhile).
    """
    data, plan = prepared._values_and_plan(x, params, args, kwargs)
    if cached is None or cached[0] is not plan:
        pattern = plan.pattern
        cached = (plan, pattern.rows.astype(np.int64) * plan.shape[1] + pattern.indices)
    dense = np.zeros(plan.shape)
    dense.reshape(-1)[cached[1]] = data  # (a view: six times faster than ``dense.flat[...]``)
    return dense, cached


#: the options an adapter passes on to :class:`SparseJacobian` (what its ``**options`` may hold)
_OPTIONS = frozenset(inspect.signature(SparseJacobian.__init__).parameters) - {
    "self", "f", "x0", "args", "kwargs", "name"}


def _own_names(who: str, fun: Any, point: Any, name: str, options: dict[str, Any]) -> None:
    """Check an adapter's arguments under its own names (``fun``, ``y0``), not SparseJacobian's.

    Found from outside: ``ode_jacobian`` with a complex ``y0`` said "`x0` must be ...", and an
    unknown keyword came back from ``SparseJacobian.__init__``.
    """
    check_callable(fun, point, name="fun")
    check_x(point, name=name)
    unknown = sorted(set(options) - _OPTIONS)
    if unknown:
        raise TypeError(f"{who}() got an unexpected keyword argument {unknown[0]!r} (its "
                        f"options are SparseJacobian's: {', '.join(sorted(_OPTIONS))})")


#: scipy's wrappers of Fortran integrators that need a dense Jacobian (``solve_ivp``'s LSODA
#: and the ``ode`` class run through the first, ``odeint`` is the second): called from one of
#: them, an :class:`OdeJacobian` with ``format="auto"`` returns a dense array at any size.
_DENSE_ONLY_CALLERS = frozenset({"scipy.integrate._ode", "scipy.integrate._odepack_py"})


def _dense_only_caller() -> bool:
    """Whether ``OdeJacobian.__call__``'s caller is a wrapper of a dense-only integrator.

    ``solve_ivp(..., args=...)`` puts a ``lambda`` of its own in between, and a user may put
    a wrapper: the four callers above it are looked at (found from outside: LSODA through
    a counting wrapper got a sparse matrix, and failed with numpy's message).
    """
    frame: Any = sys._getframe(2)
    for _ in range(4):  # (a user's wrapper too: jac=lambda t, y: jac(t, y), a counter)
        if frame is None:
            return False
        if frame.f_globals.get("__name__") in _DENSE_ONLY_CALLERS:
            return True
        frame = frame.f_back
    return False


class OdeJacobian:
    """``jac(t, y)`` for ``scipy.integrate.solve_ivp``, prepared once.

    Build it with :func:`ode_jacobian`. ``t`` is traced as a parameter (not baked in), so
    one preparation serves the whole integration. It returns a ``csr_array``, or for small
    systems (at most :data:`DENSE_ODE_MAX` unknowns, ``format="auto"``) a dense ndarray:
    ``solve_ivp`` then factors with dense LU, faster than a sparse LU at that size. Called
    by an integrator that needs a dense matrix (``method="LSODA"``, ``scipy.integrate.ode``,
    ``odeint``), ``format="auto"`` gives a dense ndarray at any size.

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
    >>> jac.format, jac.prepared.n_products
    ('dense', 2)
    >>> jac(np.pi, np.ones(4))        # t is traced: cos(pi) = -1 here; small: a dense array
    array([[-1.,  0.,  0., -1.],
           [-1., -1.,  0.,  0.],
           [ 0., -1., -1.,  0.],
           [ 0.,  0., -1., -1.]])
    """

    #: ``format="auto"``: dense for the integrators that need it (set per instance)
    _auto = False

    def __init__(self, fun: Callable[..., Any], t0: float, y0: Any, args: tuple[Any, ...] = (),
                 *, format: str = "auto", **options: Any) -> None:
        fun = check_callable(fun, y0, name="fun")
        if format not in ("auto", "csr", "dense"):
            raise ValueError(f"`format` must be 'auto', 'csr' or 'dense'; got {format!r}")
        self.prepared = SparseJacobian(
            _StateFirst(fun), y0, params=(_time(t0, "t0"),),
            args=check_args(args), name=str(getattr(fun, "__name__", "fun")), **options)
        n = int(np.size(y0))
        m = int(self.prepared.plan.shape[0])
        if m != n:  # (solve_ivp needs dy/dt of y's size; found from outside)
            raise ValueError(f"`fun` must return dy/dt, an array of y0's size {n}; at (t0, y0) "
                             f"it returned {m} values")
        #: what ``jac(t, y)`` returns: ``"csr"`` or ``"dense"`` (``format="auto"``: dense for
        #: at most :data:`DENSE_ODE_MAX` unknowns)
        self.format = ("dense" if n <= DENSE_ODE_MAX else "csr") if format == "auto" else format
        self._auto = format == "auto"
        self._dense_positions: tuple[Any, np.ndarray] | None = None

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_dense_positions"] = None  # a cache, which may hold the preparation's objects
        return state

    def __getattr__(self, name: str) -> Any:
        """The prepared Jacobian's attributes (``mode``, ``reason``, ``stats``, ...).

        Found from outside: ``jac.mode``, which the getting-started page shows on a
        ``SparseJacobian``, raised an ``AttributeError`` on the ODE adapter.
        """
        if name.startswith("_") or name == "prepared":  # (unpickling: no recursion)
            raise AttributeError(name)
        return getattr(self.prepared, name)

    @property
    def sparsity(self) -> sp.csr_array:
        """The pattern in use (it follows a new preparation with other ``args``)."""
        return self.prepared.sparsity

    def __call__(self, t: float, y: Any, *args: Any) -> sp.csr_array:
        """The Jacobian ``d fun(t, y, *args) / dy``.

        ``solve_ivp(..., args=args)`` passes its ``args`` here too: the preparation's own
        objects reuse it, other objects prepare again.
        """
        if self.format == "dense" or (self._auto and _dense_only_caller()):
            return self._dense(t, y, args)
        y = check_x(y, self.prepared._x0.shape, "y", x0_name="y0")
        return self.prepared.evaluate(y, params=(_time(t, "t"),), args=args or None)

    def _dense(self, t: float, y: Any, args: tuple[Any, ...]) -> np.ndarray:
        prepared = self.prepared
        out, self._dense_positions = _densify(
            prepared, check_x(y, prepared._x0.shape, "y", x0_name="y0"), (_time(t, "t"),),
            tuple(args) or None, None, self._dense_positions)
        return out

    def __repr__(self) -> str:
        return f"OdeJacobian({self.prepared!r}, format={self.format!r})"


def ode_jacobian(fun: Callable[..., Any], t0: float, y0: Any, args: tuple[Any, ...] = (),
                 *, format: str = "auto", **options: Any) -> OdeJacobian:
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
    format : {"auto", "csr", "dense"}
        What ``jac(t, y)`` returns. ``"auto"``: a dense ndarray for at most
        :data:`DENSE_ODE_MAX` unknowns (``solve_ivp``'s dense LU is faster there), a
        ``csr_array`` above (sparse LU), and a dense ndarray at any size for the integrators
        that only take one (``method="LSODA"``, ``scipy.integrate.ode``, ``odeint``).
    **options
        Passed to :class:`SparseJacobian` (``mode``, ``order``, ``sparsity`` ...).

    Returns
    -------
    OdeJacobian
        Callable ``(t, y) -> csr_array`` (or ndarray, see ``format``), with a ``sparsity``
        attribute.

    Notes
    -----
    ``t`` is traced: the right-hand side may use it in numpy expressions (``np.where(t > 1,
    ...)``), one preparation for every t. A Python ``if`` on ``t`` alone is followed: each
    branch is prepared when first reached, and kept (:func:`sparsejac.verifying.for_params`).

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
    _own_names("ode_jacobian", fun, y0, "y0", options)
    if "params" in options:
        raise TypeError("ode_jacobian() traces `t` as its parameter: pass the others in `args` "
                        "(params= is SparseJacobian's)")
    return OdeJacobian(fun, t0, y0, args, format=format, **options)


#: Largest problem (unknowns, and entries of the dense matrix) for which
#: :func:`least_squares_jacobian` returns dense Jacobians by default. ``least_squares`` picks
#: its trust-region solver by the type ``jac`` returns: ``"exact"`` (an SVD per iteration)
#: for an ndarray, ``"lsmr"`` (iterative, inexact) for a sparse matrix. The exact steps do not
#: depend on the problem's conditioning; ``lsmr``'s do (its default tolerances): the
#: Moré-Garbow-Hillstrom discrete boundary value problem at n = 100 takes 2 Jacobians and
#: 1.2 ms dense, 166 Jacobians and 0.42 s sparse, and a 1-D Bratu residual scaled by 1/h²
#: (found from outside) 4 Jacobians dense at n = 200 / 300 / 500 (20 / 39 / 136 ms) but does
#: not converge in 200 sparse. On a well-conditioned banded problem the sparse path is
#: faster (Broyden's tridiagonal function, n = 300 / 500: 6 / 5 ms against 47 / 196 ms), not
#: by enough to risk the other case while an SVD costs at most some 50 ms (n = 500).
DENSE_LSQ_MAX = 500
DENSE_LSQ_ENTRIES = 1_000_000


class LeastSquaresJacobian(SparseJacobian):
    """``jac(x, *args, **kwargs)`` for ``scipy.optimize.least_squares``, prepared once.

    Build it with :func:`least_squares_jacobian`. A :class:`SparseJacobian` whose calls return
    a ``csr_array``, or for small problems (at most :data:`DENSE_LSQ_MAX` unknowns and
    :data:`DENSE_LSQ_ENTRIES` matrix entries, ``format="auto"``) a dense ndarray, so that
    ``least_squares`` takes exact trust-region steps (``tr_solver="exact"``) where they are
    cheap instead of ``lsmr``'s iterative ones.

    Attributes
    ----------
    format : {"csr", "dense"}
        What a call returns.

    Examples
    --------
    >>> import numpy as np
    >>> import sparsejac
    >>> def rosenbrock(x):  # scipy's least_squares example
    ...     return np.array([10 * (x[1] - x[0] ** 2), 1 - x[0]])
    >>> jac = sparsejac.least_squares_jacobian(rosenbrock, np.array([2.0, 2.0]))
    >>> jac.format
    'dense'
    >>> jac(np.array([2.0, 2.0]))
    array([[-40.,  10.],
           [ -1.,   0.]])
    """

    def __init__(self, fun: Callable[..., Any], x0: Any, args: tuple[Any, ...] = (),
                 kwargs: dict[str, Any] | None = None, *, format: str = "auto",
                 **options: Any) -> None:
        if format not in ("auto", "csr", "dense"):
            raise ValueError(f"`format` must be 'auto', 'csr' or 'dense'; got {format!r}")
        super().__init__(fun, x0, args=check_args(args), kwargs=kwargs,
                         name=str(getattr(fun, "__name__", "fun")), **options)
        m, n = self._plan.shape
        small = n <= DENSE_LSQ_MAX and m * n <= DENSE_LSQ_ENTRIES
        self.format = ("dense" if small else "csr") if format == "auto" else format
        self._dense_positions: tuple[Any, np.ndarray] | None = None

    def __reduce__(self) -> tuple[Any, ...]:
        _, (f, x0, options, _, args, kwargs, _, verify) = super().__reduce__()
        return (_rebuild_least_squares, (f, x0, options, args, kwargs, verify, self.format))

    def __call__(self, x: Any, *args: Any, out: sp.csr_array | None = None,
                 **kwargs: Any) -> Any:
        """The Jacobian at ``x``: a ``csr_array``, or an ndarray when ``format == "dense"``.

        ``out`` (a matrix of an earlier call, refilled in place) gives the ``csr_array``.
        """
        if self.format != "dense" or out is not None:
            return super().__call__(x, *args, out=out, **kwargs)
        dense, self._dense_positions = _densify(self, x, None, tuple(args) or None,
                                                dict(kwargs) or None, self._dense_positions)
        return dense


def _rebuild_least_squares(f: Callable[..., Any], x0: np.ndarray, options: dict[str, Any],
                           args: tuple[Any, ...], kwargs: dict[str, Any], verify: bool,
                           format: str) -> LeastSquaresJacobian:
    """A LeastSquaresJacobian prepared again from the inputs of a pickled or copied one."""
    return LeastSquaresJacobian(f, x0, args, kwargs, format=format, verify=verify, **options)


def least_squares_jacobian(fun: Callable[..., Any], x0: Any, args: tuple[Any, ...] = (),
                           kwargs: dict[str, Any] | None = None, *, format: str = "auto",
                           **options: Any) -> LeastSquaresJacobian:
    """An exact ``jac(x, *args, **kwargs)`` for ``scipy.optimize.least_squares``.

    Parameters
    ----------
    fun : callable
        Residuals ``fun(x, *args, **kwargs)``, written with numpy.
    x0 : array_like
        Initial guess.
    args, kwargs : optional
        As given to ``least_squares``.
    format : {"auto", "csr", "dense"}
        What ``jac(x)`` returns. ``"auto"``: a dense ndarray for at most
        :data:`DENSE_LSQ_MAX` unknowns (``least_squares`` then takes exact trust-region
        steps, cheap at that size), a ``csr_array`` otherwise (its ``lsmr`` steps).
    **options
        Passed to :class:`SparseJacobian`.

    Returns
    -------
    LeastSquaresJacobian
        A :class:`SparseJacobian` (``stats()``, ``mode``, ``n_products``, ``sparsity``).

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
    >>> jac = sparsejac.least_squares_jacobian(broyden, -np.ones(1000))
    >>> jac.coloring.n_colors, jac.format
    (3, 'csr')
    >>> res = least_squares(broyden, -np.ones(1000), jac=jac)
    >>> bool(res.success), bool(np.abs(broyden(res.x)).max() < 1e-8)
    (True, True)
    """
    _own_names("least_squares_jacobian", fun, x0, "x0", options)
    return LeastSquaresJacobian(fun, x0, args, kwargs, format=format, **options)


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
    _own_names("root_jacobian", fun, x0, "x0", options)
    return RootJacobian(SparseJacobian(fun, x0, args=check_args(args),
                                       name=str(getattr(fun, "__name__", "fun")), **options))


class _Stacked:
    """``fun(x, y, *p)`` of ``z = [vec(y), p]`` with the mesh ``x`` traced as a parameter."""

    __slots__ = ("fun", "k", "n")

    def __init__(self, fun: Callable[..., Any], n: int, k: int) -> None:
        self.fun, self.n, self.k = fun, n, k

    def __call__(self, z: Any, x: Any) -> Any:
        m = (z.size - self.k) // self.n
        y = z[:self.n * m].reshape(self.n, m)
        if self.k:
            return self.fun(x, y, z[self.n * m:]).ravel()
        return self.fun(x, y).ravel()


class _Boundary:
    """``bc(ya, yb, *p)`` of ``z = [ya, yb, p]``."""

    __slots__ = ("bc", "n")

    def __init__(self, bc: Callable[..., Any], n: int) -> None:
        self.bc, self.n = bc, n

    def __call__(self, z: Any) -> Any:
        n = self.n
        if z.size > 2 * n:
            return self.bc(z[:n], z[n:2 * n], z[2 * n:])
        return self.bc(z[:n], z[n:2 * n])


class BvpJacobian:
    """``fun_jac`` and ``bc_jac`` for ``scipy.integrate.solve_bvp``, exact and prepared.

    Build it with :func:`bvp_jacobian`. ``solve_bvp`` asks ``fun_jac(x, y[, p])`` for the
    per-node blocks ``df_dy`` of shape ``(n, n, m)`` (and ``df_dp``, ``(n, k, m)``), and
    ``bc_jac(ya, yb[, p])`` for dense ``(n + k, n)`` blocks (and ``(n + k, k)``). The
    Jacobian of ``fun`` over the whole mesh is block diagonal by node (plus the dense ``p``
    columns), so it is coloured with ``n + k`` colours whatever ``m`` is: one prepared
    Jacobian per mesh size (``solve_bvp`` refines the mesh and also evaluates at the
    midpoints), kept for the last few sizes.

    Attributes
    ----------
    options : dict
        Passed to every :class:`SparseJacobian` built.

    Examples
    --------
    >>> import numpy as np
    >>> import sparsejac
    >>> def fun(x, y):
    ...     return np.vstack([y[1], -np.exp(y[0]) * x])
    >>> def bc(ya, yb):
    ...     return np.array([ya[0], yb[0] - 1.0])
    >>> x = np.linspace(0, 1, 3)
    >>> jac = sparsejac.bvp_jacobian(fun, bc, x, np.zeros((2, 3)))
    >>> jac.fun_jac(x, np.zeros((2, 3)))[1, 0]          # d f_1 / d y_0 = -exp(y_0) x
    array([ 0. , -0.5, -1. ])
    >>> jac.bc_jac(np.zeros(2), np.zeros(2))
    (array([[1., 0.],
           [0., 0.]]), array([[0., 0.],
           [1., 0.]]))
    """

    #: Prepared Jacobians of ``fun`` kept (one per mesh size).
    KEEP = 8

    def __init__(self, fun: Callable[..., Any], bc: Callable[..., Any], x: Any, y: Any,
                 p: Any = None, **options: Any) -> None:
        y, x = check_x(y, name="y"), check_x(x, name="x")
        if y.ndim != 2:
            raise ValueError(f"`y` must have shape (n, m); got shape {y.shape}")
        if x.shape != (y.shape[1],):  # (found from outside: only a later call noticed)
            raise ValueError(f"`x` must be the mesh of y's {y.shape[1]} nodes, shape "
                             f"({y.shape[1]},); got shape {x.shape}")
        self._fun, self._n = check_callable(fun, y, name="fun"), y.shape[0]
        self._p0 = None if p is None else np.atleast_1d(np.asarray(p, dtype=np.float64))
        self._k = 0 if self._p0 is None else self._p0.size
        self.options = dict(options)
        self._by_m: dict[int, SparseJacobian] = {}
        self._y0 = y
        self._jac_for(np.asarray(x, dtype=np.float64), y, self._p0)  # fail early
        z = np.concatenate([y[:, 0], y[:, -1]] + ([] if self._p0 is None else [self._p0]))
        self._bc = SparseJacobian(_Boundary(check_callable(bc, y[:, 0], name="bc"), self._n),
                                  z, name=str(getattr(bc, "__name__", "bc")), **self.options)

    def _jac_for(self, x: np.ndarray, y: np.ndarray, p: np.ndarray | None
                 ) -> sp.csr_array:
        m = y.shape[1]
        z = y.ravel() if p is None else np.concatenate([y.ravel(), p])
        sj = self._by_m.get(m)
        if sj is None:
            if len(self._by_m) >= self.KEEP:
                self._by_m.pop(next(iter(self._by_m)))
            sj = self._by_m[m] = SparseJacobian(
                _Stacked(self._fun, self._n, self._k), z, params=(x,),
                name=str(getattr(self._fun, "__name__", "fun")), **self.options)
        return sj.evaluate(z, params=(x,))

    def fun_jac(self, x: Any, y: Any, p: Any = None) -> Any:
        """``df_dy`` ``(n, n, m)``, or ``(df_dy, df_dp)`` with ``df_dp`` ``(n, k, m)``."""
        xa, ya, pa = self._checked(x, y, p)
        n, m, k = self._n, ya.shape[1], self._k
        J = self._jac_for(xa, ya, pa).tocoo()
        i, q = np.divmod(J.row, m)
        dy = J.col < n * m
        j, q2 = np.divmod(J.col[dy], m)
        if np.any(q[dy] != q2):
            raise ValueError(
                "`fun` couples different mesh nodes (f at node q reads y at another node); "
                "solve_bvp needs fun(x, y) computed node by node")
        df_dy = np.zeros((n, n, m))
        df_dy[i[dy], j, q[dy]] = J.data[dy]
        if k == 0:
            return df_dy
        df_dp = np.zeros((n, k, m))
        df_dp[i[~dy], J.col[~dy] - n * m, q[~dy]] = J.data[~dy]
        return df_dy, df_dp

    def _checked(self, x: Any, y: Any, p: Any) -> tuple[np.ndarray, np.ndarray, Any]:
        """``x`` (m,), ``y`` (n, m) and ``p`` (k,) as float arrays, each checked by name."""
        n = self._n
        ya = as_float_input(y, "y")
        if ya.ndim != 2 or ya.shape[0] != n:
            raise ValueError(f"`y` must have shape ({n}, m); got shape {ya.shape}")
        xa = as_float_input(x, "x")
        if xa.shape != (ya.shape[1],):
            raise ValueError(f"`x` must have shape ({ya.shape[1]},), one node per column of "
                             f"`y`; got shape {xa.shape}")
        return xa, ya, self._p(p)

    def _p(self, p: Any) -> np.ndarray | None:
        if self._k == 0:
            if p is not None and np.size(p):  # (solve_bvp(p=...) with fun_jac of 2 blocks)
                raise ValueError("`p` was given, but this BvpJacobian was prepared without "
                                 "parameters: pass p=... to bvp_jacobian too")
            return None
        if p is None:
            raise ValueError(f"`p` is missing: the problem has {self._k} parameters")
        pa = np.atleast_1d(as_float_input(p, "p"))
        if pa.shape != (self._k,):
            raise ValueError(f"`p` must have shape ({self._k},); got shape {pa.shape}")
        return pa

    def bc_jac(self, ya: Any, yb: Any, p: Any = None) -> Any:
        """``(dbc_dya, dbc_dyb)`` (``(n + k, n)`` each), and ``dbc_dp`` ``(n + k, k)``."""
        parts = [as_float_input(ya, "ya"), as_float_input(yb, "yb")]
        for name, a in zip(("ya", "yb"), parts, strict=True):
            if a.shape != (self._n,):
                raise ValueError(f"`{name}` must have shape ({self._n},); got shape {a.shape}")
        pa = self._p(p)  # (refused when given to a BvpJacobian prepared without parameters)
        if pa is not None:
            parts.append(pa)
        J = self._bc(np.concatenate(parts)).toarray()
        n = self._n
        if self._k == 0:
            return J[:, :n], J[:, n:2 * n]
        return J[:, :n], J[:, n:2 * n], J[:, 2 * n:]

    def __repr__(self) -> str:
        return (f"BvpJacobian(n={self._n}, k={self._k}, "
                f"mesh sizes prepared={sorted(self._by_m)})")


def bvp_jacobian(fun: Callable[..., Any], bc: Callable[..., Any], x: Any, y: Any,
                 p: Any = None, **options: Any) -> BvpJacobian:
    """Exact ``fun_jac`` and ``bc_jac`` for ``scipy.integrate.solve_bvp``.

    Parameters
    ----------
    fun : callable
        ``fun(x, y)`` or ``fun(x, y, p)``, vectorised over the mesh as ``solve_bvp`` wants
        (``y`` of shape ``(n, m)``), written with numpy. ``x`` is traced as a parameter.
    bc : callable
        ``bc(ya, yb)`` or ``bc(ya, yb, p)``.
    x, y : array_like
        The initial mesh ``(m,)`` and guess ``(n, m)``, as given to ``solve_bvp``.
    p : array_like, optional
        Initial guess of the unknown parameters (give it iff ``solve_bvp`` gets ``p``).
    **options
        Passed to :class:`SparseJacobian` (``mode``, ``order`` ...).

    Returns
    -------
    BvpJacobian
        Pass ``fun_jac=jac.fun_jac, bc_jac=jac.bc_jac``.

    Examples
    --------
    >>> import numpy as np
    >>> from scipy.integrate import solve_bvp
    >>> import sparsejac
    >>> def fun(x, y):                                  # y'' = -exp(y), y(0) = y(1) = 0
    ...     return np.vstack([y[1], -np.exp(y[0])])
    >>> def bc(ya, yb):
    ...     return np.array([ya[0], yb[0]])
    >>> x, y = np.linspace(0, 1, 5), np.zeros((2, 5))
    >>> jac = sparsejac.bvp_jacobian(fun, bc, x, y)
    >>> sol = solve_bvp(fun, bc, x, y, fun_jac=jac.fun_jac, bc_jac=jac.bc_jac)
    >>> bool(sol.success), round(float(sol.sol(0.5)[0]), 4)
    (True, 0.1405)
    """
    return BvpJacobian(fun, bc, x, y, p, **options)
