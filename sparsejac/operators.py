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

__all__ = ["JacobianOperator"]


class JacobianOperator(LinearOperator):  # type: ignore[misc]  # scipy ships no type stubs
    """``J(x)`` as a ``scipy.sparse.linalg.LinearOperator`` (JVPs and VJPs, matrix-free).

    Build it with :meth:`sparsejac.SparseJacobian.linear_operator`. Products with vectors
    and matrices are exact (to rounding): ``A @ v`` is ``J(x) v``, ``A.T @ w`` (``rmatvec``) is
    ``J(x)ᵀ w``; a matrix operand is pushed through in one sweep (all its columns at once).

    Attributes
    ----------
    value : ndarray
        ``f(x)`` (flattened), a by-product of the linearisation: a Newton step needs it.
    matrix_free : bool
        True when products are sweeps of the prepared program; False when the plan does not
        replay a program (``mode="fd"``, a value-dependent ``f``) and the products multiply
        the sparse Jacobian assembled once at ``x``.

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
                 matrix: sp.csr_array | None = None, value: Any = None) -> None:
        super().__init__(dtype=np.dtype(np.float64), shape=shape)
        self._lin = linearization
        self._matrix = matrix
        self.matrix_free = linearization is not None
        self.value = (np.asarray(value, dtype=np.float64).ravel() if value is not None
                      else None)

    def _matmat(self, X: np.ndarray) -> np.ndarray:
        x = np.asarray(X, dtype=np.float64)
        if self._lin is not None:
            return self._lin.jvp(x)
        assert self._matrix is not None
        return np.asarray(self._matrix @ x)

    def _matvec(self, x: np.ndarray) -> np.ndarray:
        return self._matmat(np.asarray(x, dtype=np.float64).reshape(-1, 1)).ravel()

    def _rmatmat(self, X: np.ndarray) -> np.ndarray:
        w = np.asarray(X, dtype=np.float64)
        if self._lin is not None:
            return self._lin.vjp(w.T).T
        assert self._matrix is not None
        return np.asarray(self._matrix.T @ w)

    def _rmatvec(self, x: np.ndarray) -> np.ndarray:
        return self._rmatmat(np.asarray(x, dtype=np.float64).reshape(-1, 1)).ravel()

    def _adjoint(self) -> LinearOperator:
        return LinearOperator(shape=(self.shape[1], self.shape[0]), dtype=self.dtype,
                              matvec=self._rmatvec, rmatvec=self._matvec,
                              matmat=self._rmatmat, rmatmat=self._matmat)

    _transpose = _adjoint  # real

    def __repr__(self) -> str:
        return f"JacobianOperator(shape={self.shape}, matrix_free={self.matrix_free})"
