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

from sparsejac.ad import InterpretedLinearization, Linearization, PreparedProgram
from sparsejac.engines import PreparedEngine, ReplayEngine
from sparsejac.validation import check_args
from sparsejac.verifying import Verifier, for_params

__all__ = ["DENSE_PRODUCTS", "DENSE_PRODUCTS_MIN", "JacobianOperator", "KrylovMethod", "linearized"]

#: :meth:`SparseJacobian.linear_operator <sparsejac.SparseJacobian.linear_operator>` sweeps
#: the recorded program node by node (about one evaluation of ``f`` per product) when J has
#: this many nonzeros per row and column, and :data:`DENSE_PRODUCTS_MIN` in all: a rank-one
#: term (``np.mean(x)`` broadcast back) makes J dense, not its program. Otherwise the
#: products multiply the preaccumulated entries.
DENSE_PRODUCTS = 32
#: See :data:`DENSE_PRODUCTS` (below it, a product with the entries costs under a millisecond).
DENSE_PRODUCTS_MIN = 1 << 20


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

    def __init__(self, shape: tuple[int, int], *,
                 linearization: Linearization | InterpretedLinearization | None = None,
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


def linearized(jac: Any, x: np.ndarray, params: Any, given: bool = True) -> JacobianOperator:
    """``jac.linear_operator(x, params=params)`` of a :class:`~sparsejac.SparseJacobian`.

    A prepared plan sweeps its program: the preaccumulated entries
    (:class:`~sparsejac.ad.Linearization`), or node by node where J is dense
    (:data:`DENSE_PRODUCTS`, :class:`~sparsejac.ad.InterpretedLinearization`). Finite
    differences and a value-dependent ``f`` assemble ``J(x)`` once and multiply by it.
    ``given``: whether the caller passed ``params`` (a pickle rebuilds from them).

    Examples
    --------
    >>> import numpy as np
    >>> import sparsejac
    >>> from sparsejac.operators import linearized
    >>> jac = sparsejac.SparseJacobian(lambda x: x * np.mean(x), np.ones(3))
    >>> linearized(jac, np.array([1.0, 2.0, 3.0]), ()) @ np.array([1.0, 0.0, 0.0])
    array([2.33333333, 0.66666667, 1.        ])
    """
    state = jac._state
    if state.plan.guards is not None:  # f branches on its parameters: which branch
        state = for_params(jac, state, params)
    plan = state.plan
    engine = plan.engine
    lin: Any
    if isinstance(engine, ReplayEngine):  # a dense J: products walk the program
        lin = InterpretedLinearization(engine.program, x, params)
        if jac._verify and not jac._check.agrees(state, lin.value, x, params):
            jac.evaluate(x, params=params)  # f changed: prepare again (or say why not)
            return linearized(jac, x, params, given)
        op = JacobianOperator(plan.shape, linearization=lin, value=lin.value)
    elif not isinstance(engine, PreparedEngine):
        # fd or a value-dependent f: no program to sweep; J(x) assembled, sparse products
        matrix = jac.evaluate(x, params=params)
        value = state.call(np.array(x, copy=True), *params)
        op = JacobianOperator(plan.shape, matrix=matrix, value=value, fd=jac.mode == "fd")
    else:
        m, n = plan.shape
        if plan.pattern.nnz >= max(DENSE_PRODUCTS * (m + n), DENSE_PRODUCTS_MIN):
            lin = InterpretedLinearization(engine.program.prog, x, params)
        else:
            lin = _chain_program(jac, plan).linearize(x, params)
        if jac._verify and not jac._check.agrees(state, lin.value, x, params):
            jac.evaluate(x, params=params)  # f changed: prepare again (or say why not)
            return linearized(jac, x, params, given)
        op = JacobianOperator(plan.shape, linearization=lin, value=lin.value)
    op.source = (jac, x, params if given else None)  # what a pickle rebuilds from
    return op


def _chain_program(jac: Any, plan: Any) -> PreparedProgram:
    """The chain engine's prepared program of ``plan`` (a tape's: built once per plan).

    A compiled tape's sweeps take only colouring seeds: the chain program is built from the
    tape's program once per preparation.
    """
    program = plan.engine.program
    if isinstance(program, PreparedProgram):
        return program
    hit: tuple[Any, PreparedProgram] | None = getattr(jac, "_chain_cache", None)
    if hit is None or hit[0] is not plan:
        hit = (plan, PreparedProgram(program.prog, width=1))
        jac._chain_cache = hit
    return hit[1]


class _WithArgs:
    """``fun(x, *args)``, named as ``fun`` (in messages)."""

    def __init__(self, fun: Any, args: tuple[Any, ...]) -> None:
        self.fun, self.args = fun, args
        self.__name__ = str(getattr(fun, "__name__", "F"))

    def __call__(self, x: Any) -> Any:
        return self.fun(x, *self.args)


class _TracedAtEachPoint:
    """``F`` traced at every point asked for, its products walking the trace (no pattern).

    A fresh trace at each ``x`` reads ``F``'s constants as they are then: nothing to verify.
    scipy hands the hooks flat points; ``F`` takes them in ``shape`` (None: flat).
    """

    def __init__(self, fun: Any, shape: Any, args: tuple[Any, ...]) -> None:
        self.fun = fun if not args else _WithArgs(fun, args)
        self.shape = None if shape is None else tuple(int(k) for k in np.atleast_1d(shape))

    def _point(self, x: Any) -> np.ndarray:
        xa = np.array(x, dtype=np.float64, copy=True)
        if self.shape is not None and xa.size != int(np.prod(self.shape)):
            raise ValueError(f"KrylovMethod: `shape` {self.shape} does not hold the solver's "
                             f"{xa.size} unknowns")
        return xa if self.shape is None else xa.reshape(self.shape)

    def f(self, x: Any) -> np.ndarray:
        """A real call of ``F`` at the flat ``x``, flattened (the hook's check)."""
        return np.ravel(np.asarray(self.fun(self._point(x)), dtype=np.float64))

    def linear_operator(self, x: Any) -> JacobianOperator:
        from sparsejac.errors import ConcretizationError
        from sparsejac.tracing import trace
        from sparsejac.tracing.program import check_ties

        xa = self._point(x)
        name = str(getattr(self.fun, "__name__", "F"))
        try:
            prog = trace(self.fun, xa, name=name, check=True)
        except ConcretizationError:  # F branches on values: its linearisation at this x
            prog = trace(self.fun, xa, name=name, local=True, check=True)
        # a special case at a tie (np.where(x == 0, 1, expm1(x) / x) at 0) is refused as
        # every other path refuses it: its derivative there is the special case's, not F's
        check_ties(prog)
        lin = InterpretedLinearization(prog)
        return JacobianOperator((prog.out.size, prog.x.size), linearization=lin, value=lin.value)


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
                "KrylovMethod: the solver's F differs from the function KrylovMethod was given "
                "near the starting point: it has other arguments than the solver passes "
                "(give SparseJacobian(f, x0, args=...), or KrylovMethod(F, args=...), the "
                "solver's `args`), or it is another function")
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
    jacobian : SparseJacobian or callable
        Prepared for ``F``; or ``F`` itself, written with numpy: it is then traced at each
        Newton point and the products walk that trace node by node
        (:class:`~sparsejac.ad.InterpretedLinearization`), with no sparsity pattern, colouring
        or recording: what a problem whose Jacobian is dense (a rank-one term such as
        ``np.mean(P)`` in every residual) or that is solved once wants.
    solver : str or callable
        ``"lgmres"`` (the default, as ``newton_krylov``'s), ``"gmres"``, ``"bicgstab"`` ... of
        ``scipy.sparse.linalg``, or a function with their interface.
    shape : tuple of int, optional
        With ``F``: the shape of its argument, the solver's ``x0.shape`` (scipy hands the
        hooks flat points); default flat.
    args : tuple, optional
        With ``F``: its further arguments, the solver's ``args``.
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

    def __init__(self, jacobian: Any, solver: Any = "lgmres", *, shape: Any = None,
                 args: tuple[Any, ...] = (), **options: Any) -> None:
        import scipy.sparse.linalg as sla

        if not hasattr(jacobian, "linear_operator"):
            if not callable(jacobian) or isinstance(jacobian, (np.ndarray, sp.sparray,
                                                               sp.spmatrix)):
                raise TypeError("`jacobian` must be a SparseJacobian (with `linear_operator`) "
                                f"or the function F; got {type(jacobian).__name__}")
            if shape is not None:
                try:
                    shape = tuple(int(k) for k in np.atleast_1d(shape))
                except (TypeError, ValueError):
                    raise TypeError("`shape` must be the shape of F's argument (a tuple of "
                                    f"ints) or None; got {shape!r:.60}") from None
            jacobian = _TracedAtEachPoint(jacobian, shape, check_args(args))
        elif shape is not None or args:
            raise ValueError("`shape` and `args` are for KrylovMethod(F, ...); a "
                             "SparseJacobian knows its x0's shape and its arguments")
        self.jacobian = jacobian
        if isinstance(solver, str):
            if solver not in ("gmres", "lgmres", "bicgstab", "cgs", "tfqmr", "gcrotmk"):
                raise ValueError("`solver` must be 'gmres', 'lgmres', 'bicgstab', 'cgs', "
                                 f"'tfqmr', 'gcrotmk' or a callable; got {solver!r}")
            solver = getattr(sla, solver)
        elif not callable(solver):
            raise TypeError("`solver` must be 'gmres', 'lgmres', 'bicgstab', 'cgs', 'tfqmr', "
                            f"'gcrotmk' or a callable; got {type(solver).__name__}")
        self.solver = solver
        self._outer_v: list[Any] = []
        self.options = dict(options)
        self.operator: JacobianOperator | None = None
        self.n_products = 0
        self.jac_options: dict[str, Any] = {"method": self._solve, "inner_M": _Hook(self)}

    def update(self, x: np.ndarray) -> None:
        """Linearise at the new Newton point ``x``."""
        if self.operator is not None and self.operator.shape[1] != np.size(x):
            self._outer_v.clear()  # (another problem's size: LGMRES's kept vectors do not fit)
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
        got = self.solver(counted, rhs, rtol=rtol, **options)
        try:
            x, info = got
            return np.asarray(x, dtype=np.float64).reshape(rhs.shape), int(info)
        except (TypeError, ValueError):
            raise TypeError("`solver` must return (x, info) as scipy.sparse.linalg's solvers "
                            f"do, x of shape {rhs.shape}; got {type(got).__name__} "
                            f"{got!r:.60}") from None

    def _counted(self, A: JacobianOperator) -> Any:
        def matvec(v: np.ndarray) -> np.ndarray:
            self.n_products += 1
            return np.asarray(A.matvec(v))
        return matvec
