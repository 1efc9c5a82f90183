"""A Jacobian prepared once and evaluated at many points: :class:`SparseJacobian`.

It checks its arguments (:mod:`sparsejac.validation`), runs the one pipeline
(:func:`sparsejac.pipeline.prepare`), prepares again when ``f``'s arguments change, and
evaluates the plan. The solver adapters (:mod:`sparsejac.adapters`) build on its public
members; the one-off :func:`sparsejac.jacobian` runs the same pipeline.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import scipy.sparse as sp

from sparsejac.ad.fused import describe
from sparsejac.ad.tape import Fused, Tape
from sparsejac.coloring import DEFAULT_REVERSE_COST
from sparsejac.deferred import deferred_search, search_due
from sparsejac.engines import PreparedEngine
from sparsejac.errors import TraceMismatchError
from sparsejac.pattern import SparsityPattern
from sparsejac.pipeline import Plan, PlanView, fd_evaluations, prepare
from sparsejac.plans import plan_stats
from sparsejac.validation import (
    Mode,
    check_args,
    check_callable,
    check_compressed_size,
    check_engine,
    check_fd_bounds,
    check_fd_method,
    check_fd_workers,
    check_flag,
    check_kwargs,
    check_mode,
    check_out_matrix,
    check_params,
    check_reverse_cost,
    check_x,
    fits_pattern,
    function_label,
)
from sparsejac.verifying import (
    VERIFY_RTOL,
    Verifier,
    _same_args,
    bind_arguments,
    check_flat_x,
    check_structure,
    for_params,
    prepared_again,
    watch,
)

if TYPE_CHECKING:
    from sparsejac.operators import JacobianOperator

__all__ = ["VERIFY_RTOL", "SparseJacobian", "bind_arguments"]


def _rebuild(f: Callable[..., Any], x0: np.ndarray, options: dict[str, Any],
             params: tuple[Any, ...], args: tuple[Any, ...], kwargs: dict[str, Any], name: str,
             verify: bool) -> SparseJacobian:
    """A SparseJacobian prepared again from the inputs of a pickled or copied one."""
    return SparseJacobian(f, x0, params=params, args=args, kwargs=kwargs, name=name,
                          verify=verify, **options)


_NO_POINT = np.zeros(0)


@dataclass(frozen=True)
class _State:
    """What a preparation produced: the arguments, the bound ``f`` and the plan."""

    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    call: Callable[..., Any]
    plan: Plan
    #: (tape, :meth:`Tape.fused_call`'s tuple) when a call can take the fused path of a
    #: compiled tape: no direct assembly, an exact mode (see :meth:`SparseJacobian._fast_data`)
    fast: tuple[Any, ...] | None = dataclasses.field(init=False, default=None)

    def __post_init__(self) -> None:
        object.__setattr__(self, "watched", watch(self.call))  # f's globals, now (verify)
        plan, engine = self.plan, self.plan.engine
        if (isinstance(engine, PreparedEngine) and isinstance(engine.program, Tape)
                and engine.direct is None and plan.mode != "fd"):
            c = plan.colorings[plan.mode]
            _, p, _, q = c._seed_groups
            try:
                check_compressed_size(plan.mode, plan.pattern.shape, p, q)
            except MemoryError:  # the call path refuses it, with the message
                return
            call = engine.program.fused_call(c)
            if call is not None:
                object.__setattr__(self, "fast", (engine.program, call))


def _count(k: int, what: str) -> str:
    return f"{k:,} {what}" + ("" if k == 1 else "s")


class SparseJacobian(PlanView):
    """A sparse Jacobian prepared once and evaluated at many points.

    Preparation traces ``f`` at ``x0`` (sparsity detection), colours the pattern, chooses
    the mode and records the program; each call then only evaluates and decompresses. The
    object is a drop-in ``jac=`` for ``scipy.optimize.least_squares`` and ``root`` (called
    as ``jac(x, *args)``); see :func:`sparsejac.ode_jacobian` for ``solve_ivp``.

    Parameters
    ----------
    f : callable
        ``f(x, *params, *args, **kwargs)`` written with numpy; ``x`` may have any shape.
    x0 : array_like
        A representative point (every later ``x`` must have its shape).
    sparsity : sparse matrix, array_like or path, optional
        The pattern to use, shape ``(f(x).size, x.size)``. By default it is detected. A given
        pattern must contain the detected one (checked); for ``mode="fd"`` it is trusted.
    mode : {"auto", "forward", "reverse", "mixed", "fd"}
        ``forward``: column colouring, ``B = J @ S``; ``reverse``: row colouring,
        ``C = W @ J``; ``mixed``: bidirectional colouring, both; ``fd``: compressed finite
        differences (approximate, for black-box ``f``); ``auto``: the exact mode of lowest
        cost = forward products + ``reverse_cost`` × reverse products (ties: forward, reverse,
        mixed), the same on every machine; or the fastest when timed (``calibrate=True``).
    order : str or callable
        Vertex order for :func:`sparsejac.color` (default ``"best"``).
    effort : float, optional
        How much the ``"best"`` colouring search may spend per candidate mode (see
        :func:`sparsejac.color`). Default:
        :func:`~sparsejac.coloring.budget.prepared_effort` of the pattern (small for small
        patterns); raise it for a problem solved many times, where one colour fewer pays.
    time_budget : float, optional
        An opt-in wall-clock limit (seconds) on that search.
    params : sequence, optional
        Traced, non-differentiated inputs of ``f`` after ``x`` (an ODE's time ``t``): the
        Jacobian is prepared once for all their values; pass new ones to :meth:`evaluate`.
    args, kwargs : optional
        Further arguments of ``f``, constants of the preparation. Calls may pass the same
        objects again (as scipy's solvers do); other objects trigger a new preparation.
    fd_method : {"2-point", "3-point", "cs"}, optional
        Finite-difference scheme, for ``mode="fd"`` only (default ``"2-point"``).
    calibrate : bool
        For ``mode="auto"``: time each candidate mode at ``x0`` and keep the fastest (the
        choice then depends on the machine).
    reverse_cost : float
        Cost of a reverse product relative to a forward one in the cost rule.
    name : str, optional
        Name of ``f`` in messages and the repr (default ``"f"``, the argument's name; the
        solver adapters pass the user's function name).
    verify : bool
        At every call, compare the recorded program's value with a real call of ``f`` (at a
        fixed generic point near ``x0``, with the call's ``params``), and prepare again when
        they differ: ``f`` read a global, a closure variable or a mutable container that has
        changed since the preparation (a parameter sweep). Costs one evaluation of ``f`` per
        Jacobian (plus one replay of the values when ``params`` change, as an ODE's ``t``
        does); with ``False``, call :meth:`refresh` after changing such a constant. Finite
        differences and value-dependent ``f`` (traced again at every call) call ``f`` itself
        and need no check.
    check : bool
        For ``mode="fd"`` with a trusted ``sparsity``: probe ``f`` at ``x0`` with dense finite
        differences (about ``log2(n) + 2 p + 8`` evaluations, once) and refuse a pattern
        that misses entries, naming them. (An exact mode checks a given pattern against the
        traced one anyway.)
    engine : {"auto", "tape", "chain"}
        How the exact modes evaluate the recorded program at each call. ``"tape"``: one
        compiled loop over an instruction table (microseconds for programs of many small
        operations: kinetics right-hand sides, Python loops over elements); ``"chain"``: local
        Jacobians preaccumulated at preparation and replayed with numpy (fastest for a few
        large array operations). ``"auto"`` picks by a fixed rule on the program's sizes
        (:func:`sparsejac.pipeline.choose_engine`); a program the tape cannot encode or hold
        (``MAX_BLOCK``) uses the chain. ``stats()["engine"]["engine"]`` says which one runs.
    workers : int or map-like callable, optional
        For ``mode="fd"``: where the ``p + 1`` evaluations of ``f`` run, as scipy's
        ``approx_derivative(workers=...)``: an int for a process pool of that size (-1: every
        CPU; ``f`` must pickle), or any ``map(f, points)``-like callable
        (``multiprocessing.Pool().map``, ``concurrent.futures.Executor.map``, a
        ``dask.distributed`` client's map wrapper). The Jacobian is bit-identical to the
        serial one.
    bounds : (lb, ub) or scipy.optimize.Bounds, optional
        For ``mode="fd"``: bounds that no evaluation of ``f`` leaves (give ``least_squares``
        its own ``bounds``): near them steps turn back, or become one-sided second-order
        differences for ``"3-point"``, as in scipy's ``approx_derivative``.

    Attributes
    ----------
    sparsity : scipy.sparse.csr_array of bool
        The pattern in use (it follows a new preparation). Where ``f`` branched in Python
        on its parameters, that branch's pattern, and reading it warns.
    coloring : ColoringResult
        The colouring of the chosen mode.
    mode : str
        The chosen mode (never ``"auto"``).
    reason : str
        Why.
    n_products : int
        Compressed products per Jacobian (JVPs, VJPs, both, or f evaluations for fd).
    plan : Plan
        The current preparation (:class:`sparsejac.pipeline.Plan`).

    Raises
    ------
    ValueError
        A bad ``mode``, ``fd_method``, ``x0``, or a ``sparsity`` missing detected entries.
    ConcretizationError
        ``f`` branches on values and no ``sparsity`` was given (see the message).

    See Also
    --------
    sparsejac.jacobian : a single Jacobian.
    sparsejac.ode_jacobian : the adapter for ``solve_ivp``.

    Examples
    --------
    >>> import numpy as np
    >>> import sparsejac
    >>> def f(x):
    ...     return x[1:] ** 2 - x[:-1]
    >>> jac = sparsejac.SparseJacobian(f, np.ones(5), mode="forward")
    >>> jac
    SparseJacobian(f, shape=(4, 5), nnz=8, mode='forward': 2 JVPs instead of 5)
    >>> jac(np.arange(5.0)).toarray()
    array([[-1.,  2.,  0.,  0.,  0.],
           [ 0., -1.,  4.,  0.,  0.],
           [ 0.,  0., -1.,  6.,  0.],
           [ 0.,  0.,  0., -1.,  8.]])
    """

    def __init__(
        self,
        f: Callable[..., Any],
        x0: Any,
        *,
        sparsity: Any = None,
        mode: Mode = "auto",
        order: Any = "best",
        effort: float | None = None,
        time_budget: float | None = None,
        params: Sequence[Any] = (),
        args: tuple[Any, ...] = (),
        kwargs: dict[str, Any] | None = None,
        fd_method: str | None = None,
        calibrate: bool = False,
        reverse_cost: float = DEFAULT_REVERSE_COST,
        name: str | None = None,
        verify: bool = True,
        check: bool = False,
        engine: str = "auto",
        workers: Any = None,
        bounds: Any = None,
    ) -> None:
        self._f = check_callable(f, x0)
        self._mode = check_mode(mode)
        self._fd_method = check_fd_method(fd_method, self._mode)
        self._reverse_cost = check_reverse_cost(reverse_cost)
        self._x0 = check_x(x0, name="x0")
        self._name = "f" if name is None else str(name)
        self._options: dict[str, Any] = {
            "sparsity": sparsity, "mode": self._mode, "order": order, "effort": effort,
            "time_budget": time_budget, "fd_method": self._fd_method,
            "calibrate": check_flag(calibrate, "calibrate"), "reverse_cost": self._reverse_cost,
            "check": check_flag(check, "check"), "engine": check_engine(engine),
            "workers": check_fd_workers(workers, self._mode),
            "bounds": check_fd_bounds(bounds, self._x0, self._mode)}
        self._params0 = check_params(params)
        #: the parameter shapes (a float for a scalar parameter passes the fast path unchecked)
        self._scalar_param = len(self._params0) == 1 and np.ndim(self._params0[0]) == 0
        self._verify = check_flag(verify, "verify")
        self._check = Verifier(self._x0)
        self._lock = threading.RLock()
        self._n_prepared = 0
        self._calls = 0  # calls of the current preparation (the deferred search's clock)
        self._branches: list[_State] = []  # for other branches on the params (for_params)
        self._branch_preparations = 0
        self._shown: SparsityPattern | None = None  # the pattern structure() returned
        #: the arguments of ``f`` that a call without any uses (not the last call's)
        self._args0, self._kwargs0 = check_args(args), check_kwargs(kwargs)
        self._prepare(self._args0, self._kwargs0)

    # -- copy and pickle: a prepared Jacobian is rebuilt from its inputs (prepare is
    #    deterministic, so the copy has the same pattern, colouring and mode) ---------------

    def __reduce__(self) -> tuple[Any, ...]:
        state = self._state
        options = {k: v for k, v in self._options.items() if k != "fd_method"}
        if self._mode == "fd":
            options["fd_method"] = self._fd_method
        return (_rebuild, (self._f, self._x0, options, self._params0, state.args, state.kwargs,
                           self._name, self._verify))

    def _prepare(self, args: tuple[Any, ...], kwargs: dict[str, Any],
                 params: Sequence[Any] | None = None, *, branch: bool = False) -> None:
        """Prepare at ``params`` (default: the preparation's); ``branch``: keep the others."""
        call = bind_arguments(self._f, args, kwargs)
        plan = prepare(call, self._x0, params=self._params0 if params is None else params,
                       name=self._name, defer=True, **self._options)
        if not branch:
            self._branches = []  # (prepared with other arguments or before a change of f)
        # one assignment: a concurrent call sees the old state or the new one, never a mix
        self._state = _State(args, kwargs, call, plan)
        self._calls = 0
        self._n_prepared += 1

    @property
    def _plan(self) -> Plan:
        return self._state.plan

    def refresh(self) -> None:
        """Prepare again now, with the current values of what ``f`` reads.

        A prepared Jacobian records ``f``'s program with the constants it saw at preparation
        (globals, closure variables, mutable containers). With ``verify=True`` (the default)
        every call compares the recorded program's ``f(x)`` with a real call of ``f`` and
        prepares again by itself when they differ; call this after changing such a constant
        when ``verify=False``.

        Examples
        --------
        >>> import numpy as np
        >>> import sparsejac
        >>> k = [1.0]
        >>> jac = sparsejac.SparseJacobian(lambda x: k[0] * x ** 2, np.ones(2), verify=False)
        >>> k[0] = 5.0
        >>> jac.refresh()
        >>> jac(np.ones(2)).toarray()
        array([[10.,  0.],
               [ 0., 10.]])
        """
        with self._lock:
            state = self._state
            self._prepare(state.args, state.kwargs)

    # -- the current preparation -----------------------------------------------------------

    @property
    def plan(self) -> Plan:
        """The current preparation."""
        return self._plan

    @property
    def x0(self) -> np.ndarray:
        """The preparation point (a copy)."""
        return self._x0.copy()

    # -- evaluation ----------------------------------------------------------------------

    def __call__(self, x: Any, *args: Any, out: sp.csr_array | None = None,
                 **kwargs: Any) -> sp.csr_array:
        """The Jacobian at ``x`` as a new ``csr_array``.

        Parameters
        ----------
        x : array_like
            Same shape as ``x0`` (a flat vector of the same size is accepted, reshaped; a
            warning where ``f`` gives it other values: :func:`~sparsejac.verifying.check_flat_x`).
        *args, **kwargs
            Passed to ``f`` (as scipy's solvers do). The same objects as at preparation
            reuse it; other objects prepare again.
        out : csr_array, optional
            A matrix returned by an earlier call, refilled in place and returned (refused if
            its structure was changed); if new arguments gave another, a new matrix.

        Returns
        -------
        scipy.sparse.csr_array of float64
            Sorted, canonical, with its own index arrays (int32 where they fit): every
            scipy method works on it, in place too, without affecting later calls.
        """
        if not args and not kwargs and out is None:
            got = self._fast_data(x, None)
            if got is not None:
                return got[1].matrix(got[0])
        return self.evaluate(x, args=args or None, kwargs=kwargs or None, out=out)

    def _fast_data(self, x: Any, params: Sequence[Any] | None
                   ) -> tuple[np.ndarray, Plan] | None:
        """J's values and their plan by one call of the fused tape kernel, or None.

        The kernel checks that ``x`` and every value are finite, writes the parameters into
        their slots and replays the program at verify's point too; None (the general path
        then answers, says why, or prepares again) where any of that does not hold.
        """
        state = self._state
        fast = state.fast
        if (fast is None or type(x) is not np.ndarray or x.dtype != np.float64
                or x.shape != self._x0.shape or not (x.flags.c_contiguous and x.flags.writeable)
                or not _same_args(state, self._args0, self._kwargs0)):
            return None  # (a strided or read-only x: the general path, no kernel compiled anew)
        ps = self._params0 if params is None else params
        if params is not None and not (self._scalar_param and len(params) == 1
                                       and type(params[0]) is float):
            ps = check_params(params, like=self._params0)
        if state.plan.guards is not None:  # f branches on its parameters: which branch
            state = for_params(self, state, ps)
            fast = state.fast
            if fast is None:
                return None
        tape, (kernel, kernel0, ints, floats, nnz, m, _, work) = fast
        pv = tape.param_vector(ps)
        if pv is None:
            return None
        verify = self._verify
        data, fx = np.empty(nnz), np.empty(m)
        fy: np.ndarray | None = _NO_POINT
        y = _NO_POINT
        if verify:  # the program's value at verify's point: kept while pv stays the same
            key = pv.tobytes()
            fy = self._check.kept(state, key)
            if fy is None:
                fy, y = np.empty(m), self._check.y_flat
        assert fy is not None
        if not (y.size or pv.size):
            if type(kernel0) is Fused:  # before numba is loaded (see Tape.fused_call)
                kernel0 = kernel0.pick(work)
            ok = kernel0(ints, floats, x.reshape(-1), data, fx)
        else:
            if type(kernel) is Fused:
                kernel = kernel.pick(work)
            ok = kernel(ints, floats, x.reshape(-1), pv, y, data, fx, fy)
        if not ok:
            return None
        if verify:
            if y.size:
                self._check.keep(state, key, fy)
            if not self._check.agrees_at_y(state, fy, ps):
                return None
        if state.plan.pending:
            self._after_call(state)
        return data, state.plan

    def evaluate(self, x: Any, *, params: Sequence[Any] | None = None,
                 args: Sequence[Any] | None = None, kwargs: dict[str, Any] | None = None,
                 out: sp.csr_array | None = None, format: str = "csr"
                 ) -> sp.csr_array | sp.csc_array:
        """The Jacobian at ``x``, with new ``params`` values and, if given, ``args``/``kwargs``.

        ``format="csc"`` returns a ``csc_array`` instead (for CSC consumers such as SuperLU
        and SUNDIALS; the values are gathered into CSC order by a permutation computed once,
        no sort per call).

        Examples
        --------
        >>> import numpy as np
        >>> import sparsejac
        >>> jac = sparsejac.SparseJacobian(lambda x, t: np.sin(t) * x ** 2, np.ones(2),
        ...                                params=(0.0,))
        >>> jac.evaluate(np.ones(2), params=(np.pi / 2,)).toarray()
        array([[2., 0.],
               [0., 2.]])
        >>> jac.evaluate(np.ones(2), params=(np.pi / 2,), format="csc").format
        'csc'
        """
        if format not in ("csr", "csc"):
            raise ValueError(f"`format` must be 'csr' or 'csc'; got {format!r}")
        plan = self._plan
        if out is not None:
            check_out_matrix(out, plan.pattern, format)
        if args is None and kwargs is None and out is None and format == "csr":
            # (an ODE adapter's call with the time as parameter: one fused call, as __call__)
            got = self._fast_data(x, params)
            if got is not None:
                return got[1].matrix(got[0])
        buf = out.data if out is not None and fits_pattern(out, plan.pattern) else None
        data, new = self._data(x, params, args, kwargs, buf)
        if out is None:
            return new.matrix(data, format)
        if (buf is None or new.pattern is not plan.pattern) and not fits_pattern(out, new.pattern):
            # another structure: a new matrix, out left alone (refused if it has neither)
            check_out_matrix(out, new.pattern, fits=(plan.pattern,) if buf is None else None)
            return new.matrix(np.array(data, copy=True))
        if data is not out.data:
            out.data[:] = data
        return out

    def structure(self, order: str = "csr") -> tuple[np.ndarray, np.ndarray]:
        """``(rows, cols)`` of every structural nonzero, in the order :meth:`values` uses.

        For solvers that take the structure once and the values at every iteration in that
        fixed order (interior-point solvers such as IPOPT: ``jacobianstructure`` and
        ``jacobian``).

        Parameters
        ----------
        order : {"csr", "csc"}
            Row by row (columns sorted within a row), or column by column.

        Returns
        -------
        rows, cols : ndarray of int64
            New arrays, one entry per nonzero.

        Examples
        --------
        >>> import numpy as np
        >>> import sparsejac
        >>> jac = sparsejac.SparseJacobian(lambda x: x[1:] * x[:-1], np.ones(3))
        >>> jac.structure()
        (array([0, 0, 1, 1]), array([0, 1, 1, 2]))
        >>> jac.values(np.array([1.0, 2.0, 3.0]))
        array([2., 1., 3., 2.])
        """
        pat = self._shown = self._plan.pattern
        if order == "csc":
            return np.array(pat.col_indices), np.repeat(
                np.arange(pat.shape[1], dtype=np.int64), np.diff(pat.col_indptr))
        if order != "csr":
            raise ValueError(f"`order` must be 'csr' or 'csc'; got {order!r}")
        return np.array(pat.rows), np.array(pat.indices)

    def values(self, x: Any, *, params: Sequence[Any] | None = None,
               out: np.ndarray | None = None, order: str = "csr",
               args: Sequence[Any] | None = None, kwargs: dict[str, Any] | None = None
               ) -> np.ndarray:
        """J's nonzero values at ``x`` in the fixed order of :meth:`structure`.

        Parameters
        ----------
        x : array_like
            The point.
        params : sequence, optional
            New values of the traced parameters.
        out : ndarray, optional
            A float64 array of ``nnz`` values, filled in place (no allocation for the
            ``"csr"`` order) and returned.
        order : {"csr", "csc"}
            As for :meth:`structure`.
        args, kwargs : optional
            Arguments of ``f`` (default: the preparation's), as for :meth:`evaluate`.

        Returns
        -------
        ndarray of float64, shape (nnz,)

        Examples
        --------
        >>> import numpy as np
        >>> import sparsejac
        >>> jac = sparsejac.SparseJacobian(lambda x: x[1:] * x[:-1], np.ones(3))
        >>> buf = np.empty(4)
        >>> jac.values(np.array([1.0, 2.0, 3.0]), out=buf) is buf
        True
        >>> jac.values(np.array([1.0, 2.0, 3.0]), order="csc")   # column by column
        array([2., 1., 3., 2.])
        """
        if order not in ("csr", "csc"):
            raise ValueError(f"`order` must be 'csr' or 'csc'; got {order!r}")
        nnz = self._plan.pattern.nnz
        if out is not None and not (isinstance(out, np.ndarray) and out.shape == (nnz,)
                                    and out.dtype == np.float64 and out.flags.writeable):
            raise ValueError(f"`out` must be a writeable float64 array of shape ({nnz},); got "
                             f"{type(out).__name__} {getattr(out, 'shape', '')} "
                             f"{getattr(out, 'dtype', '')}")
        if order == "csr":
            data, plan = self._values_and_plan(x, params, args, kwargs, out)
            check_structure(self, plan.pattern, plan.guards, out)
            return data
        data, plan = self._data(x, params, args, kwargs, None)
        check_structure(self, plan.pattern, plan.guards, out)
        gathered: np.ndarray = data[plan.pattern.csc_to_csr]
        if out is None:
            return gathered
        out[:] = gathered
        return out

    def _values_and_plan(self, x: Any, params: Sequence[Any] | None, args: Any, kwargs: Any,
                         out: np.ndarray | None = None) -> tuple[np.ndarray, Plan]:
        """J's values in CSR order (in ``out`` if it fits) and the plan that computed them."""
        got = self._fast_data(x, params) if args is None and kwargs is None else None
        if got is None:
            return self._data(x, params, args, kwargs, out)
        if out is not None and out.shape == got[0].shape:
            out[:] = got[0]
            return out, got[1]
        return got

    def _data(self, x: Any, params: Sequence[Any] | None, args: Sequence[Any] | None,
              kwargs: dict[str, Any] | None, out: np.ndarray | None
              ) -> tuple[np.ndarray, Plan]:
        """J's values in CSR order (written into ``out`` if given), and the plan used."""
        if args is None and kwargs is None:
            args, kwargs = self._args0, self._kwargs0  # a call without: the preparation's
        state = self._state
        sized = state.plan.pattern  # the pattern `out` was checked against
        if not _same_args(state, () if args is None else tuple(args), kwargs or {}):
            state = self.use_args(() if args is None else tuple(args), kwargs or {})
        xa = check_x(x, self._x0.shape)
        ps = self._params0 if params is None else check_params(params, like=self._params0)
        check_flat_x(self, x, xa, state, ps, "this Jacobian")  # (a flat x: reshaped)
        if state.plan.guards is not None:  # f branches on its parameters: which branch
            state = for_params(self, state, ps)
        plan = state.plan
        if out is not None and plan.pattern is not sized and plan.pattern != sized:
            out = None  # other arguments or another branch: another pattern, `out` left alone
        data, fx = plan.evaluate_with_value(xa, ps, out)
        if plan.replays and self._verify and not self._check.agrees(state, fx, xa, ps):
            # f changed since the preparation (a global, closure, container): prepare again
            with self._lock:  # (another thread may have prepared for other arguments)
                if self._state is state or not _same_args(self._state, state.args,
                                                          state.kwargs):
                    prepared_again(self, state, new_args=False)
                    self._prepare(state.args, state.kwargs, ps)
                state = for_params(self, self._state, ps)
            plan = state.plan
            if out is not None and plan.pattern != sized:
                out = None  # the new preparation found another pattern
            data, fx = plan.evaluate_with_value(xa, ps, out)
            if plan.replays and not self._check.agrees(state, fx, xa, ps) and (
                    not self._check.tolerate_rounding(state, fx, xa, ps)):
                raise TraceMismatchError(
                    f"`{self._name}` does not compute the same values from the same x: the "
                    "recorded program disagrees with a real call even right after preparing "
                    "again. f must be a deterministic function of x (and of its arguments); "
                    "random numbers or state that changes at every call cannot be "
                    "differentiated this way (use mode='fd' with `sparsity=`).")
        if plan.pending:
            self._after_call(state)
        return data, plan

    def search(self) -> None:
        """Run the deferred colour search now (it otherwise waits until calls pay for it).

        A prepared Jacobian whose seeds matter starts with one colouring pass per candidate
        mode; the ``order="best"`` search at the default effort runs between two calls once
        the calls' nominal work has paid for it (:func:`sparsejac.deferred.deferred_search`).
        Call this to have the fewest products from the first call on; it does nothing when
        no search is pending.

        Examples
        --------
        >>> import numpy as np
        >>> import sparsejac
        >>> def f(x):
        ...     return np.concatenate([x[1:] * x[:-1], [np.sum(np.sin(x)) ** 2]])
        >>> jac = sparsejac.SparseJacobian(f, np.ones(3000))
        >>> jac.stats()["deferred_search"] is not None
        True
        >>> jac.search()
        >>> jac.stats()["deferred_search"] is None
        True
        """
        with self._lock:
            state = self._state
            if state.plan.pending:
                better = deferred_search(state.plan, max(self._calls, search_due(state.plan)))
                if better is not None:
                    self._state = dataclasses.replace(state, plan=better)

    def _after_call(self, state: _State) -> None:
        """Count the call; run the deferred colour search when calls have paid for it."""
        self._calls += self._state is state  # (unlocked: a count lost to a race only delays)
        if self._state is not state or self._calls < search_due(state.plan):
            return  # (the usual call: no search due)
        with self._lock:
            better = deferred_search(state.plan, self._calls) if self._state is state else None
            if better is not None:
                self._state = dataclasses.replace(state, plan=better)

    def use_args(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> _State:
        """Prepare again unless ``args``/``kwargs`` are the preparation's own objects.

        Returns the preparation for them: a call uses it, not ``self._state``, which another
        thread may replace meanwhile (for its own arguments).
        """
        args, kwargs = check_args(args), check_kwargs(kwargs)
        with self._lock:
            if not _same_args(self._state, args, kwargs):
                prepared_again(self, None, new_args=True)
                self._prepare(args, kwargs)
            return self._state

    def f(self, x: Any) -> Any:
        """``f(x, *params, *args, **kwargs)`` with the preparation's arguments."""
        return self._state.call(check_x(x, self._x0.shape), *self._params0)

    @property
    def params0(self) -> tuple[Any, ...]:
        """The ``params`` values of the preparation."""
        return self._params0

    @property
    def options(self) -> dict[str, Any]:
        """The options a saved plan keeps (JSON values): mode asked for, costs, engine, name."""
        out: dict[str, Any] = {"mode": self._mode, "reverse_cost": self._reverse_cost,
                               "engine": self._options["engine"], "name": self._name}
        if self._mode == "fd":
            out["fd_method"] = self._fd_method
        return out

    def save(self, path: Any) -> None:
        """Write the pattern, colourings, mode and preparation point to ``path`` (``.npz``).

        :func:`sparsejac.load` prepares the same Jacobian from it, with the function given
        again, without colouring (the costly part for a large pattern). Arrays and a JSON
        header only: no code is stored (``f``, ``args`` and ``kwargs`` are supplied at load).

        Examples
        --------
        >>> import os, tempfile
        >>> import numpy as np
        >>> import sparsejac
        >>> jac = sparsejac.SparseJacobian(lambda x: np.sin(x[1:] * x[:-1]), np.ones(4))
        >>> path = os.path.join(tempfile.mkdtemp(), "sin.npz")
        >>> jac.save(path)
        >>> sorted(np.load(path).files)[:3]
        ['cols_forward', 'cols_mixed', 'fx0']
        """
        from sparsejac.plans import save

        save(self, path)

    def linear_operator(self, x: Any, *, params: Sequence[Any] | None = None
                        ) -> JacobianOperator:
        """``J(x)`` as a matrix-free ``scipy.sparse.linalg.LinearOperator``.

        The prepared program is linearised at ``x`` once (its primal replay and the
        value-dependent local derivatives); then ``matvec``/``matmat`` are forward sweeps
        (JVPs) and ``rmatvec``/``rmatmat`` reverse sweeps (VJPs) with the given vectors or
        matrices as seeds: no tracing, no colouring, no call of ``f`` per product. For
        Krylov solvers (``gmres``, ``lsqr``, a Newton–Krylov loop). A plan that does not
        replay a program (``mode="fd"``, a value-dependent ``f``) assembles ``J(x)`` once
        instead and multiplies by it (``matrix_free`` is then False).

        Parameters
        ----------
        x : array_like
            The point (shape of ``x0``, or flat).
        params : sequence, optional
            Values of the traced parameters (default: the preparation's).

        Returns
        -------
        JacobianOperator
            Shape ``(m, n)``; its ``value`` attribute is ``f(x)``, flattened.

        Examples
        --------
        >>> import numpy as np
        >>> from scipy.sparse.linalg import gmres
        >>> import sparsejac
        >>> def f(x):
        ...     return 4 * x - np.roll(x, 1) - np.roll(x, -1) + x ** 3
        >>> jac = sparsejac.SparseJacobian(f, np.ones(50))
        >>> A = jac.linear_operator(np.full(50, 0.5))
        >>> dx, info = gmres(A, -A.value, rtol=1e-12, atol=0.0)
        >>> info, bool(np.allclose(jac(np.full(50, 0.5)) @ dx, -A.value))
        (0, True)
        """
        from sparsejac.operators import linearized  # scipy.sparse.linalg: on first use

        xa = check_x(x, self._x0.shape)
        return linearized(self, xa, self._params0 if params is None else
                          check_params(params, like=self._params0),
                          params is not None)

    # -- introspection -------------------------------------------------------------------

    def stats(self) -> dict[str, Any]:
        """Figures of the preparation: sizes, colours per mode, the choice and timings.

        Returns
        -------
        dict
            JSON-ready: ``shape``, ``nnz``, ``mode``, ``reason``, ``n_products``, ``exact``,
            ``retraced_each_call``; per candidate mode ``colors`` (products), ``products``
            (``[forward, reverse]``), ``costs`` (the cost rule's value); ``lower_bound`` (column,
            row), ``coloring_budget`` (search effort, spent or deferred), ``deferred_search``
            (None, or its ``effort``, the call it is due after, the calls so far),
            ``coloring_work``, ``seconds`` (detection, coloring, preparation, calibration per
            timed mode), ``engine`` (``["kernel"]``: how a tape's calls run), ``preparations``,
            ``branches`` (for branches of ``f`` on its parameters: kept, made).
        """
        out = plan_stats(self._plan, self._calls, self._n_prepared,
                         [len(self._branches), self._branch_preparations])
        if self._state.fast is not None and isinstance(out.get("engine"), dict):
            out["engine"]["kernel"] = describe(self._state.fast[1][:2])
        return out

    def __repr__(self) -> str:
        m, n = self._plan.shape
        c = self.coloring
        work = {"forward": _count(c.n_forward, "JVP"), "reverse": _count(c.n_reverse, "VJP"),
                "mixed": f"{_count(c.n_forward, 'JVP')} + {_count(c.n_reverse, 'VJP')}"}.get(
            self.mode) or _count(self.n_products, "f evaluation")
        full = m if self.mode == "reverse" else (min(m, n) if self.mode == "mixed" else n)
        if self.mode == "fd":  # the dense scheme: one (two for 3-point) evaluation per column
            full = fd_evaluations(self._fd_method, n)
        note = ", approximate" if self.mode == "fd" else ""
        label = function_label(self._f) if self._name == "f" else self._name
        if (self._plan.engine.stats() or {}).get("path") == "direct":
            return (f"SparseJacobian({label}, shape=({m}, {n}), nnz={self._plan.pattern.nnz:,}"
                    f", assembled directly: no products; mode={self.mode!r} would take {work})")
        return (f"SparseJacobian({label}, shape=({m}, {n}), nnz={self._plan.pattern.nnz:,}, "
                f"mode={self.mode!r}: {work} instead of {full:,}{note})")
