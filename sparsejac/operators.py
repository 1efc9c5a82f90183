"""Matrix-free Jacobian products: :class:`JacobianOperator`, a scipy ``LinearOperator``.

Built by :meth:`sparsejac.SparseJacobian.linear_operator`. For a prepared plan (a global
trace) the primal replay at ``x`` is done once, and every product is one sweep of the prepared
program with a dense seed matrix: ``matvec`` / ``matmat`` a forward sweep (JVPs), ``rmatvec``
/ ``rmatmat`` a reverse sweep (VJPs), no tracing and no call of ``f``. Plans that do not replay
a program (finite differences, a value-dependent ``f`` traced at every call) assemble the
sparse Jacobian at ``x`` once and multiply by it.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp
from scipy.sparse.linalg import LinearOperator

from sparsejac.ad import Linearization
from sparsejac.verifying import Verifier

__all__ = ["JacobianOperator", "KrylovMethod"]


class JacobianOperator(LinearOperator):  # type: ignore[misc]  # scipy ships no type stubs
    """``J(x)`` as a ``scipy.sparse.linalg.LinearOperator`` (JVPs and VJPs, matrix-free).

    Build it with :meth:`sparsejac.SparseJacobian.linear_operator`. ``A @ v`` is ``J(x) v``,
    ``A.T @ w`` (``rmatvec``) is ``J(x)ᵀ w``; a matrix operand is pushed through in one sweep
    (all its columns at once). Products are exact (to rounding), except for a Jacobian by
    finite differences (``approximate`` is then True and the repr says so).

    Attributes
    ----------
    value : ndarray
        ``f(x)`` (flattened), a by-product of the linearisation: a Newton step needs it.
    matrix_free : bool
        True when products are sweeps of the prepared program; False when the plan does not
        replay a program (``mode="fd"``, a value-dependent ``f``) and the products multiply
        the sparse Jacobian assembled once at ``x``.
    approximate : bool
        True when that Jacobian is by finite differences (``mode="fd"``): products are then
        only as accurate as the differences.

    Examples
    --------
    >>> import numpy as np
    >>> import sparsejac
    >>> jac = sparsejac.SparseJacobian(lambda x: x[1:] ** 2 - x[:-1], np.ones(4))
    >>> A = jac.linear_operator(np.arange(4.0))
    >>> A
    JacobianOperator(shape=(3, 4), matrix_free=True)
    >>> A @ np.ones(4)                          # J v, one forward sweep
    array([1., 3., 5.])
    >>> A.T @ np.ones(3)                        # Jᵀ w, one reverse sweep
    array([-1.,  1.,  3.,  6.])
    >>> A.value                                 # f(x)
    array([1., 3., 7.])
    """

    def __init__(self, shape: tuple[int, int], *, linearization: Linearization | None = None,
                 matrix: sp.csr_array | None = None, value: Any = None,
                 fd: bool = False) -> None:
        super().__init__(dtype=np.dtype(np.float64), shape=shape)
        self.approximate = bool(fd and linearization is None)
        self._lin = linearization
        self._matrix = matrix
        self.matrix_free = linearization is not None
        self.value = (np.asarray(value, dtype=np.float64).ravel() if value is not None
                      else None)

    def _matmat(self, X: np.ndarray) -> np.ndarray:
        if np.iscomplexobj(X):  # J is real: J (a + ib) = J a + i J b, as a real matrix gives
            return self._matmat(np.real(X)) + 1j * self._matmat(np.imag(X))
        x = np.asarray(X, dtype=np.float64)
        if self._lin is not None:
            return self._lin.jvp(x)
        assert self._matrix is not None
        return np.asarray(self._matrix @ x)

    def _matvec(self, x: np.ndarray) -> np.ndarray:
        return self._matmat(np.asarray(x).reshape(-1, 1)).ravel()

    def _rmatmat(self, X: np.ndarray) -> np.ndarray:
        if np.iscomplexobj(X):  # Jᴴ = Jᵀ for a real J
            return self._rmatmat(np.real(X)) + 1j * self._rmatmat(np.imag(X))
        w = np.asarray(X, dtype=np.float64)
        if self._lin is not None:
            return self._lin.vjp(w.T).T
        assert self._matrix is not None
        return np.asarray(self._matrix.T @ w)

    def _rmatvec(self, x: np.ndarray) -> np.ndarray:
        return self._rmatmat(np.asarray(x).reshape(-1, 1)).ravel()

    def _adjoint(self) -> LinearOperator:
        return LinearOperator(shape=(self.shape[1], self.shape[0]), dtype=self.dtype,
                              matvec=self._rmatvec, rmatvec=self._matvec,
                              matmat=self._rmatmat, rmatmat=self._matmat)

    _transpose = _adjoint  # real

    #: ``(jacobian, x, params)`` it was made from (set by ``SparseJacobian.linear_operator``)
    source: tuple[Any, np.ndarray, Any] | None = None

    def __reduce__(self) -> tuple[Any, ...]:
        if self.source is None:
            raise TypeError("a JacobianOperator pickles only when made by "
                            "SparseJacobian.linear_operator")
        jac, x, params = self.source
        return (_linear_operator, (jac, x, params))

    def __repr__(self) -> str:
        note = ", approximate (finite differences)" if self.approximate else ""
        return f"JacobianOperator(shape={self.shape}, matrix_free={self.matrix_free}{note})"


def _linear_operator(jac: Any, x: np.ndarray, params: Any) -> JacobianOperator:
    """A JacobianOperator made again (unpickling): ``jac.linear_operator(x, params)``."""
    op: JacobianOperator = jac.linear_operator(x, params=params)
    return op


class _Hook:
    """The ``inner_M`` side of :class:`KrylovMethod`: scipy calls ``setup`` and ``update``."""

    def __init__(self, owner: KrylovMethod) -> None:
        self._owner = owner

    def setup(self, x: np.ndarray, f: np.ndarray, func: Any) -> None:
        # scipy's F binds the solver's args: a Jacobian prepared with others (or for another
        # function) would steer every Newton step wrong; compare once, at the start
        y = Verifier(np.asarray(x, dtype=np.float64)).y  # near x, generic: at a special x
        # (a constant one, say) the two may agree whatever their arguments
        mine = np.ravel(np.asarray(self._owner.jacobian.f(y), dtype=np.float64))
        theirs = np.ravel(np.asarray(func(y), dtype=np.float64))
        if mine.shape != theirs.shape or not np.allclose(mine, theirs, rtol=1e-9, atol=1e-12,
                                                         equal_nan=True):
            raise ValueError(
                "KrylovMethod: the solver's F differs from the SparseJacobian's f near the "
                "starting point: it was prepared with other arguments than the solver passes "
                "(give SparseJacobian(f, x0, args=...) the solver's `args`), or for another "
                "function")
        self._owner.update(x)

    def update(self, x: np.ndarray, f: np.ndarray) -> None:
        self._owner.update(x)


class KrylovMethod:
    """Exact products inside ``scipy.optimize.newton_krylov`` and ``root(method="krylov")``.

    scipy's Newton–Krylov solver builds finite-difference products ``(F(x + εv) − F(x)) / ε``
    and takes no Jacobian, but it accepts a callable inner solver (``method=``) and calls the
    ``setup``/``update`` hooks of its preconditioner (``inner_M=``) at every Newton step.
    ``jac_options`` fills both: the hook linearises ``jac`` at the new point
    (:meth:`SparseJacobian.linear_operator`) and the inner solver runs ``solver`` on that exact
    operator instead of scipy's finite-difference one.

    Parameters
    ----------
    jacobian : SparseJacobian
        Prepared for ``F``.
    solver : str or callable
        ``"gmres"``, ``"lgmres"``, ``"bicgstab"`` ... of ``scipy.sparse.linalg``, or a function
        with their interface.
    **options
        Passed to ``solver`` at every call (``restart``, a preconditioner ``M`` ...). For
        ``"lgmres"`` and ``"gmres"`` the defaults are the ones ``newton_krylov`` itself uses
        (one cycle per Newton step; LGMRES carries its outer vectors across steps).

    Attributes
    ----------
    jac_options : dict
        ``{"method": ..., "inner_M": ...}``: ``newton_krylov(F, x0, **jac_options)`` or
        ``root(F, x0, method="krylov", options={"jac_options": jac_options})``.
    operator : JacobianOperator or None
        The operator at the current Newton point.
    n_products : int
        Products asked of the operators so far.

    Examples
    --------
    >>> import numpy as np
    >>> from scipy.optimize import newton_krylov, root
    >>> import sparsejac
    >>> def F(x):
    ...     return 4 * x - np.roll(x, 1) - np.roll(x, -1) + x ** 3 - 1.0
    >>> km = sparsejac.KrylovMethod(sparsejac.SparseJacobian(F, np.zeros(50)))
    >>> x = newton_krylov(F, np.zeros(50), f_tol=1e-12, **km.jac_options)
    >>> bool(np.abs(F(x)).max() < 1e-12), km.n_products > 0
    (True, True)
    >>> sol = root(F, np.zeros(50), method="krylov",
    ...            options={"jac_options": km.jac_options, "fatol": 1e-12})
    >>> bool(sol.success)
    True
    """

    def __init__(self, jacobian: Any, solver: Any = "gmres", **options: Any) -> None:
        import scipy.sparse.linalg as sla

        if not hasattr(jacobian, "linear_operator"):
            raise TypeError("`jacobian` must be a SparseJacobian (with `linear_operator`); got "
                            f"{type(jacobian).__name__}")
        self.jacobian = jacobian
        if isinstance(solver, str):
            if solver not in ("gmres", "lgmres", "bicgstab", "cgs", "tfqmr", "gcrotmk"):
                raise ValueError("`solver` must be 'gmres', 'lgmres', 'bicgstab', 'cgs', "
                                 f"'tfqmr', 'gcrotmk' or a callable; got {solver!r}")
            solver = getattr(sla, solver)
        self.solver = solver
        self._outer_v: list[Any] = []
        self.options = dict(options)
        self.operator: JacobianOperator | None = None
        self.n_products = 0
        self.jac_options: dict[str, Any] = {"method": self._solve, "inner_M": _Hook(self)}

    def update(self, x: np.ndarray) -> None:
        """Linearise at the new Newton point ``x``."""
        self.operator = self.jacobian.linear_operator(x)

    def _solve(self, op: Any, rhs: np.ndarray, rtol: float = 1e-5, maxiter: int | None = None,
               M: Any = None, **kw: Any) -> tuple[np.ndarray, int]:
        A = self.operator
        if A is None:  # pragma: no cover - scipy always calls setup first
            raise RuntimeError("KrylovMethod used before scipy called its setup hook")
        counted = LinearOperator(A.shape, dtype=A.dtype, matvec=self._counted(A))
        options = {"atol": 0.0, **kw, **self.options}
        import scipy.sparse.linalg as sla

        if self.solver is sla.lgmres:  # scipy's own settings for its default solver:
            # one LGMRES cycle per Newton step, the outer vectors carried across steps
            options.setdefault("maxiter", 1)
            options.setdefault("outer_k", 10)
            options.setdefault("outer_v", self._outer_v)
            options.setdefault("prepend_outer_v", True)
            options.setdefault("store_outer_Av", False)
        elif self.solver is sla.gmres and maxiter is not None:
            options.setdefault("restart", maxiter)  # as scipy: one restart cycle per step
            options.setdefault("maxiter", 1)
        if maxiter is not None:
            options.setdefault("maxiter", maxiter)
        x, info = self.solver(counted, rhs, rtol=rtol, **options)
        return np.asarray(x), int(info)

    def _counted(self, A: JacobianOperator) -> Any:
        def matvec(v: np.ndarray) -> np.ndarray:
            self.n_products += 1
            return np.asarray(A.matvec(v))
        return matvec
