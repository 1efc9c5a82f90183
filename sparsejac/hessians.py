"""Sparse Hessians: :func:`hessian_sparsity`, :func:`hessian` and :class:`SparseHessian`.

The gradient of a scalar ``f`` is the reverse sweep of its recorded program, and that sweep
can itself be recorded (:mod:`sparsejac.ad.second_order`). The Hessian is the Jacobian of the
gradient program, so the whole Jacobian pipeline applies to it:

* the **pattern** is the gradient program's Jacobian pattern (global, or at ``x`` with
  ``local=True``), made symmetric;
* the **colouring** is symmetric: star (direct recovery) or acyclic (recovery by
  substitution), ``H @ S`` for an ``n × p`` seed matrix with ``p`` often far below the
  number of colours a column colouring of the same pattern needs;
* the **products** are forward mode over the recorded reverse sweep (forward-over-reverse,
  all ``p`` seed columns in one pass), by the prepared engine;
* the **Lagrangian** ``L(x) = σ f(x) + λᵀ c(x)`` of a constrained problem is a scalar
  function with parameters ``σ, λ`` (:func:`sparsejac.constrained.lagrangian_hessian`),
  prepared once for every value of them.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import scipy.sparse as sp

from sparsejac.ad import evaluate as replay_value
from sparsejac.ad.interpret import program_jvp
from sparsejac.ad.second_order import gradient_call, trace_gradient
from sparsejac.coloring import color
from sparsejac.coloring.budget import prepared_effort
from sparsejac.coloring.orders import resolve_order
from sparsejac.detection import program_sparsity
from sparsejac.engines import PreparedEngine, ReplayEngine, warn_constant_branch
from sparsejac.errors import (
    ConcretizationError,
    TraceMismatchError,
    UnsupportedPrimitiveError,
    with_hint,
)
from sparsejac.pattern import SparsityPattern, as_pattern
from sparsejac.pipeline import Plan, PlanView, SavedPlan, prepare
from sparsejac.primitives.derive import mul0_matmul
from sparsejac.sparse_jacobian import bind_arguments
from sparsejac.tracing import Program, no_cyclic_gc, trace
from sparsejac.tracing.program import check_ties
from sparsejac.tracing.walk import Values
from sparsejac.validation import (
    check_args,
    check_callable,
    check_flag,
    check_kwargs,
    check_params,
    check_real,
    check_subset,
    check_x,
)
from sparsejac.verifying import (
    Verifier,
    _same_args,
    check_flat_x,
    check_structure,
    for_params,
    watch,
)

__all__ = ["HESSP_RENT_SHARE", "SparseHessian", "hessian", "hessian_sparsity"]

#: Symmetric colouring methods.
METHODS = ("star", "acyclic")

#: :meth:`SparseHessian.hessp` computes a dense (not recorded) Hessian at an ``x`` once the
#: products asked for there number ``n_products / HESSP_RENT_SHARE`` (one at a time, they
#: cost about that many times more per product than the Hessian's blocked ones: 9 ms
#: against 0.35 s / 400 for logistic regression on a dense 5,000 × 400 design), and answers
#: the ones before by single Hessian-vector products. A recorded Hessian is computed at the
#: first product: it costs two or three gradients, where a single product walking the
#: program costs one (45 against 100 ms for 21 colours and 10⁵ unknowns).
HESSP_RENT_SHARE = 8


def _symmetric(p: sp.csr_array) -> sp.csr_array:
    """``|P| ∪ |P|ᵀ`` as a bool CSR array with sorted indices."""
    b = sp.csr_array(p, dtype=bool)
    s = sp.csr_array((b + b.T).astype(bool))
    s.sort_indices()
    return s


def _scalar_program(call: Callable[..., Any], x0: np.ndarray, params: Sequence[Any], name: str,
                    local: bool = False) -> Program:
    try:
        prog = trace(call, x0, params=params, name=name, local=local, check=True)
    except UnsupportedPrimitiveError as exc:  # its advice names mode='fd', which is Jacobians'
        raise with_hint(exc, (
            " For second derivatives: Hessians have no mode='fd'; for such an f, take finite "
            "differences of a gradient you write by hand, sparsejac.SparseJacobian(grad, x0, "
            "mode='fd', sparsity=pattern).")) from exc
    if prog.out.size != 1:
        raise ValueError(
            f"`{name}` must return a scalar (one element) for a Hessian; it returns shape "
            f"{prog.out.shape}. For a vector function's second derivatives use the Hessian of "
            "a weighted sum (constraint_hessian), or the Jacobian of its gradient")
    return prog


def hessian_sparsity(f: Callable[..., Any], x: Any, *, local: bool = False,
                     params: Sequence[Any] = (), args: tuple[Any, ...] = (),
                     kwargs: dict[str, Any] | None = None) -> sp.csr_array:
    """The sparsity pattern of the Hessian of a scalar ``f``: which pairs of inputs interact.

    Linear operations carry first-order dependencies only; a product, or a nonlinear function
    of a value that depends on several inputs, makes those inputs interact. The pattern comes
    from the recorded program's reverse sweep: every primitive's local Jacobian is constant
    (no second-order interaction) or computed from values, whose inputs then interact.

    Parameters
    ----------
    f : callable
        ``f(x, *params, *args, **kwargs)`` written with numpy, returning one element.
    x : array_like
        A representative point (any shape; flattened in C order).
    local : bool
        The pattern at ``x`` only (Python control flow on values allowed): what the branch
        taken at ``x`` and the selections made there (``max``, ``sort``) read. Default: the
        global pattern, valid for every ``x``.
    params : sequence, optional
        Traced, non-differentiated arguments (a Lagrangian's multipliers).
    args, kwargs : optional
        Further arguments of ``f``, passed unchanged.

    Returns
    -------
    scipy.sparse.csr_array of bool, shape (n, n)
        Symmetric, with sorted indices.

    Raises
    ------
    ValueError
        ``f`` does not return one element.
    sparsejac.UnsupportedPrimitiveError
        ``f`` uses an operation without a second-order rule (named in the message).

    Examples
    --------
    >>> import numpy as np
    >>> import sparsejac
    >>> f = lambda x: np.sum(x[1:] * x[:-1]) + np.sum(x ** 3) + np.sum(x)
    >>> sparsejac.hessian_sparsity(f, np.ones(4)).toarray().astype(int)
    array([[1, 1, 0, 0],
           [1, 1, 1, 0],
           [0, 1, 1, 1],
           [0, 0, 1, 1]])
    """
    fn = check_callable(f, x)
    xa = check_x(x, name="x")
    local = check_flag(local, "local")
    params = check_params(params)
    call = bind_arguments(fn, check_args(args), check_kwargs(kwargs))
    prog = _scalar_program(call, xa, params, "f", local=local)
    with np.errstate(all="ignore"):  # (derivatives: inf * 0 at a singular point)
        gprog = trace_gradient(prog, xa, params=params, name="gradient of f", local=local)
    return _symmetric(program_sparsity(gprog, local=local))


def hessian(f: Callable[..., Any], x: Any, *, method: str = "star", params: Sequence[Any] = (),
            args: tuple[Any, ...] = (), kwargs: dict[str, Any] | None = None) -> sp.csr_array:
    """The Hessian of a scalar ``f`` at ``x`` as a sparse matrix, exact to rounding.

    One-off: pattern detection, a symmetric colouring (one greedy pass) and one forward-over-
    reverse pass with the colouring's seeds. For many points, prepare :class:`SparseHessian`.
    An ``f`` with Python branches on values (``if x[0] > 0:``) gets the Hessian of the branch
    taken at ``x``, from local traces, as :func:`sparsejac.jacobian` does.

    Parameters
    ----------
    f : callable
        ``f(x, *params, *args, **kwargs)`` written with numpy, returning one element.
    x : array_like
        The point.
    method : {"star", "acyclic"}
        Symmetric colouring (see :class:`SparseHessian`).
    params, args, kwargs : optional
        As for :func:`hessian_sparsity`.

    Returns
    -------
    scipy.sparse.csr_array of float64, shape (n, n)

    Examples
    --------
    >>> import numpy as np
    >>> import sparsejac
    >>> f = lambda x: np.sum(x[1:] * x[:-1] ** 2)
    >>> sparsejac.hessian(f, np.array([1.0, 2.0, 3.0])).toarray()
    array([[4., 2., 0.],
           [2., 6., 4.],
           [0., 4., 0.]])
    """
    xa = check_x(x, name="x")  # messages name the caller's argument
    params = check_params(params)
    try:
        return SparseHessian(f, xa, method=method, params=params, args=args, kwargs=kwargs,
                             effort=0.0, verify=False)(xa)
    except ConcretizationError:  # f branches on values: the Hessian of the branch at x
        return _local_hessian(bind_arguments(f, check_args(args), check_kwargs(kwargs)), xa,
                              tuple(params))


def _at_x_only(*args: Any) -> Any:  # pragma: no cover - a one-off plan never calls it
    raise RuntimeError("a gradient recorded at one x (local) is evaluated there only")


def _local_hessian(call: Callable[..., Any], x: np.ndarray, params: tuple[Any, ...]
                   ) -> sp.csr_array:
    """The Hessian at ``x`` of an ``f`` with Python branches on values (local traces).

    The Jacobian of the gradient recorded at ``x``, as :func:`sparsejac.jacobian` follows the
    branches, by the columns of a natural colouring, made exactly symmetric.
    """
    prog = _scalar_program(call, x, params, "f", local=True)
    check_ties(prog)
    warn_constant_branch(prog, "f", "Hessian", 4)  # (the caller of sparsejac.hessian)
    with np.errstate(all="ignore"):  # (derivatives: inf * 0 at a singular point)
        return _local_hessian_of(prog, x, params)


def _local_hessian_of(prog: Program, x: np.ndarray, params: tuple[Any, ...]) -> sp.csr_array:
    gprog = trace_gradient(prog, x, params=params, name="gradient of f", local=True)
    gpattern = program_sparsity(gprog, local=True)
    pattern = _symmetric(gpattern)
    pat = as_pattern(pattern) if pattern.nnz else SparsityPattern(pattern.shape, [], [])
    column = color(pat, "column", "natural")
    saved = SavedPlan(pat, {"forward": column}, "forward", "", {"forward": 1.0}, 0.0)
    plan = prepare(_at_x_only, x, params=params, name="gradient of f", sparsity=saved,
                   mode="forward", order="natural", effort=0.0, one_shot=True,
                   traced=(gprog, gpattern))
    h = plan.matrix(plan.evaluate(x, params))
    return sp.csr_array((h + h.T) * 0.5)


@dataclasses.dataclass(frozen=True)
class _State:
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    call: Callable[..., Any]
    program: Program
    plan: Plan
    lower: np.ndarray  # positions (CSR order) of the lower triangle's entries
    #: for every position (CSR order), the lower-triangle position of its value: ``data[mirror]``
    #: copies each lower entry onto its upper twin (exactly symmetric; each exact to rounding)
    mirror: np.ndarray
    #: the recorded gradient of ``f``: one forward pass over it is one Hessian-vector product
    gradient_program: Program | None = None

    def __post_init__(self) -> None:
        # what f reads from globals and closures, at preparation (verifying.watch)
        object.__setattr__(self, "watched", watch(self.call))


def _rebuild_hessian(f: Callable[..., Any], x0: np.ndarray, options: dict[str, Any]
                     ) -> SparseHessian:
    """A SparseHessian prepared again from the inputs of a pickled or copied one."""
    return SparseHessian(f, x0, **options)


class SparseHessian(PlanView):
    """The Hessian of a scalar function, prepared once and evaluated at many points.

    Preparation traces ``f``, records its gradient (the reverse sweep) as a program, detects
    the Hessian's pattern and prepares the recorded program. Where that program gives the
    Hessian's entries directly, a call assembles them; otherwise the pattern is coloured
    symmetrically and a call costs one forward-over-reverse pass with ``p`` seed columns
    (``p`` = the number of colours) and the recovery. It is a drop-in ``hess=`` for
    ``minimize``'s ``trust-constr`` and ``Newton-CG`` (``trust-exact``, ``dogleg`` need
    ``lambda x: H(x).toarray()``); :meth:`gradient` is a ``jac=``, :meth:`hessp` a ``hessp=``
    (``trust-ncg`` and ``trust-krylov`` take it, not a sparse ``hess=``).

    Parameters
    ----------
    f : callable
        ``f(x, *params, *args, **kwargs)`` written with numpy, returning one element.
    x0 : array_like
        A representative point (every later ``x`` must have its shape).
    sparsity : sparse matrix or array_like, optional
        A symmetric pattern to use; it must contain the detected one (checked).
    method : {"star", "acyclic"}
        ``"star"``: star colouring, every entry read directly from one product;
        ``"acyclic"``: acyclic colouring, fewer colours, entries recovered by substitution:
        each subtracts entries it shares a product with, so it is exact to rounding relative
        to the largest of them (with entries of 1e12 and 1e-6 in one product the small one
        can come out 0); keep ``"star"`` where entries span many orders of magnitude.
    order : str
        Vertex order of the colouring (default ``"best"``: the search of
        :func:`sparsejac.color`, bounded by ``effort``).
    effort : float, optional
        The colouring search's effort; default from the pattern's size
        (:func:`~sparsejac.coloring.budget.prepared_effort`).
    params : sequence, optional
        Traced, non-differentiated arguments at preparation (a Lagrangian's ``σ, λ``); new
        values are given to :meth:`evaluate` without preparing again.
    args, kwargs : optional
        Further arguments of ``f``. Calls with other argument objects prepare again.
    name : str, optional
        Name of ``f`` in messages.
    verify : bool
        Check, at every call, that the recorded program still computes ``f(x)`` (a changed
        global or closure constant), and prepare again when it does not.
    path : {"auto", "products"}
        ``"auto"``: when the recorded gradient program gives the Hessian's entries directly
        (no dense intermediate), assemble them without any product; otherwise, and always
        with ``"products"``, Hessian-vector products with the symmetric colouring's seeds.

    Raises
    ------
    ValueError
        ``f`` does not return one element; ``sparsity`` is not symmetric or misses entries.
    sparsejac.UnsupportedPrimitiveError
        ``f`` uses an operation without a second-order rule.

    Examples
    --------
    >>> import numpy as np
    >>> import sparsejac
    >>> def energy(x):                       # a chain of springs with a quartic term
    ...     return np.sum((x[1:] - x[:-1]) ** 2) + 0.25 * np.sum(x ** 4)
    >>> hess = sparsejac.SparseHessian(energy, np.ones(6))
    >>> hess.n_products, hess.coloring.method         # 3 colours instead of 6 columns
    (3, 'star')
    >>> H = hess(np.linspace(0, 1, 6))
    >>> H.shape, H.nnz
    ((6, 6), 16)
    >>> hess.gradient(np.zeros(6))
    array([0., 0., 0., 0., 0., 0.])
    """

    def __init__(
        self,
        f: Callable[..., Any],
        x0: Any,
        *,
        sparsity: Any = None,
        method: str = "star",
        order: Any = "best",
        effort: float | None = None,
        params: Sequence[Any] = (),
        args: tuple[Any, ...] = (),
        kwargs: dict[str, Any] | None = None,
        name: str | None = None,
        verify: bool = True,
        path: str = "auto",
    ) -> None:
        self._f = check_callable(f, x0)
        if path not in ("auto", "products"):
            raise ValueError(f"`path` must be 'auto' or 'products'; got {path!r}")
        self._path = path
        if method not in METHODS:
            raise ValueError(f"`method` must be one of {METHODS}; got {method!r}")
        self._method = method
        if isinstance(order, str) and order != "best":  # an unknown name: an error now
            resolve_order(order, "column")
        self._order = order
        if effort is not None and not (isinstance(effort, (int, float)) and effort >= 0):
            raise ValueError(f"`effort` must be a number >= 0 or None; got {effort!r}")
        self._effort = effort
        self._x0 = check_x(x0, name="x0")
        self._name = "f" if name is None else str(name)
        self._params0 = check_params(params)
        self._verify = check_flag(verify, "verify")
        self._check = Verifier(self._x0)
        self._user_sparsity = sparsity
        self._lock = threading.RLock()
        self._n_prepared = 0
        #: preparations for other branches of f on its parameters (``if t < t1:``)
        self._branches: list[_State] = []
        self._branch_preparations = 0
        self._shown: SparsityPattern | None = None  # the pattern structure() returned
        self._cache: tuple[bytes, tuple[Any, ...], sp.csr_array, Any] | None = None
        #: the products :meth:`hessp` computed one at a time at one x: (x, params, state, n)
        self._rent: tuple[bytes, tuple[Any, ...], Any, int, Values | None] | None = None
        self._hessp_counts = [0, 0]  # products computed alone, Hessians computed
        self._args0 = check_args(args)  # what a call without arguments uses
        self._prepare(self._args0, check_kwargs(kwargs))

    def __reduce__(self) -> tuple[Any, ...]:
        state = self._state
        options = {"sparsity": self._user_sparsity, "method": self._method,
                   "order": self._order, "effort": self._effort, "params": self._params0,
                   "args": state.args, "kwargs": state.kwargs, "name": self._name,
                   "verify": self._verify, "path": self._path}
        return (_rebuild_hessian, (self._f, self._x0, options))

    # -- preparation -----------------------------------------------------------------------

    def _prepare(self, args: tuple[Any, ...], kwargs: dict[str, Any],
                 params: Sequence[Any] | None = None, *, branch: bool = False) -> None:
        """Prepare at ``params`` (default: the preparation's); ``branch``: keep the others.

        The cyclic garbage collector waits meanwhile (as for a Jacobian's preparation): each
        of its automatic passes walks the whole growing gradient program, a third of the
        preparation of a loop over 2,000 elements.
        """
        with no_cyclic_gc():
            self._prepare_paused(args, kwargs, params, branch=branch)

    def _prepare_paused(self, args: tuple[Any, ...], kwargs: dict[str, Any],
                        params: Sequence[Any] | None, *, branch: bool) -> None:
        ps = self._params0 if params is None else tuple(params)
        if not branch:
            self._branches = []  # (prepared with other arguments or before a change of f)
        seconds: dict[str, float] = {}
        t0 = time.perf_counter()
        call = bind_arguments(self._f, args, kwargs)
        try:
            prog = _scalar_program(call, self._x0, ps, self._name)
            check_ties(prog)
        except ConcretizationError as e:  # (local=True is no option of a prepared Hessian)
            raise ConcretizationError(str(e).replace(
                "or ask for a pattern valid at this x only with local=True.", "or, for one x, "
                "sparsejac.hessian(f, x) (the branch taken there).")) from None
        grad = gradient_call(prog)
        with np.errstate(all="ignore"):  # (derivatives: inf * 0 at a singular point)
            gprog = trace_gradient(prog, self._x0, params=ps,
                                   name=f"gradient of {self._name}")
        gpattern = program_sparsity(gprog)
        detected = _symmetric(gpattern)
        if self._user_sparsity is None:
            pattern = as_pattern(detected) if detected.nnz else \
                SparsityPattern(detected.shape, [], [])
        else:
            pattern = as_pattern(self._user_sparsity, name="sparsity")
            if pattern.shape != detected.shape:
                raise ValueError(f"`sparsity` has shape {pattern.shape}; the Hessian is "
                                 f"{detected.shape}")
            user = pattern.to_csr_array().astype(bool)
            if (user != user.T).nnz:
                raise ValueError("`sparsity` must be symmetric (a Hessian's pattern)")
            check_subset(detected, pattern)
        seconds["detection"] = time.perf_counter() - t0
        # the engine needs a width, not the gradient Jacobian's colourings (the Hessian's own
        # replace them): the natural column colouring, given as a saved plan, is all it colours
        column = color(pattern, "column", "natural")  # also recovers H from H @ S
        saved = SavedPlan(pattern, {"forward": column}, "forward", "",
                          {"forward": float(column.n_colors)}, 0.0)
        # (the engine is built for the symmetric colouring's products, far fewer than the
        # column colouring's on an arrowhead: n of them took the chain engine past n = 1,100)
        natural = color(pattern, "symmetric", "natural", method=self._method)
        with np.errstate(all="ignore"):
            plan = prepare(grad, self._x0, params=ps,
                           name=f"gradient of {self._name}", sparsity=saved,
                           mode="auto" if self._path == "auto" else "forward",
                           order="natural", effort=0.0, traced=(gprog, gpattern),
                           width=min(column.n_colors, natural.n_colors))
        seconds["preparation"] = plan.seconds.get("detection", 0.0) + plan.seconds.get(
            "preparation", 0.0)
        t0 = time.perf_counter()
        direct = isinstance(plan.engine, PreparedEngine) and plan.engine.direct is not None
        if direct:  # the recorded program gives H's entries: no products, no search
            effort = 0.0
            coloring = natural
            reason = ("assembled directly from the recorded program: no Hessian-vector "
                      f"products ({self._method} colouring would take {coloring.n_colors})")
        else:
            effort = (prepared_effort(pattern.nnz) if self._effort is None
                      else float(self._effort))
            coloring = color(pattern, partition="symmetric", method=self._method,
                             order=self._order, effort=effort)
            reason = (f"{self._method} colouring of the symmetric pattern: "
                      f"{coloring.n_colors} Hessian-vector products")
            if column.n_colors < coloring.n_colors:  # (patterns with holes on the diagonal)
                reason = (f"column colouring: {column.n_colors} Hessian-vector products, "
                          f"fewer than the {self._method} colouring's {coloring.n_colors}")
                coloring = column
        seconds["coloring"] = time.perf_counter() - t0
        plan = dataclasses.replace(
            plan, colorings={"forward": coloring}, mode="forward",
            costs={"forward": float(coloring.n_colors)}, reason=reason, effort=effort,
            seconds=seconds)
        pat = plan.pattern
        rows = pat.rows
        below = rows >= pat.indices
        lower = np.flatnonzero(below)
        # the pattern is symmetric: its k-th entry in CSC order is the transpose of its k-th in
        # CSR order, so csc_to_csr[k] is where the transpose of CSR entry k sits
        mirror = np.where(below, np.arange(pat.nnz), pat.csc_to_csr)
        prog.snapshot_constants()  # replays (the check, the gradient) compute f as recorded
        self._state = _State(args, kwargs, call, prog, plan, lower, mirror, gprog)
        self._cache = self._rent = None
        self._n_prepared += 1

    @property
    def _plan(self) -> Plan:
        return self._state.plan

    @property
    def plan(self) -> Plan:
        """The current preparation (its pattern, colouring and engine)."""
        return self._plan

    @property
    def x0(self) -> np.ndarray:
        """The preparation point (a copy)."""
        return self._x0.copy()

    @property
    def params0(self) -> tuple[Any, ...]:
        """The parameter values given at preparation."""
        return self._params0

    def refresh(self) -> None:
        """Prepare again now, with the current values of what ``f`` reads."""
        with self._lock:
            self._prepare(self._state.args, self._state.kwargs)

    def _use_args(self, args: tuple[Any, ...] | None) -> _State:
        """The preparation for ``args`` (None: the preparation's), for the asking call only."""
        args = self._args0 if args is None else tuple(args)
        with self._lock:
            state = self._state
            if not _same_args(state, args, state.kwargs):
                self._prepare(args, state.kwargs)
            return self._state

    def _data(self, x: Any, params: Sequence[Any] | None, state: _State
              ) -> tuple[np.ndarray, Any, _State]:
        """H's values (CSR order), the gradient at ``x``, and the preparation used."""
        xa = check_x(x, self._x0.shape, of="this Hessian")
        ps = self._params0 if params is None else check_params(params, like=self._params0)
        check_flat_x(self, x, xa, state, ps, "this Hessian")  # (a flat x: reshaped)
        state = self._checked_state(xa, ps, state)
        with np.errstate(all="ignore"):  # (f itself ran under the caller's: the check's call)
            data, grad = state.plan.evaluate_with_value(xa, ps)
        return data, grad, state

    def _checked_state(self, xa: np.ndarray, ps: Sequence[Any], state: _State) -> _State:
        """The preparation, checked against a real call (``verify=True``): prepared again."""
        if len(ps) != len(self._params0) or any(
                np.size(p) != np.size(p0) for p, p0 in zip(ps, self._params0, strict=False)):
            raise ValueError(
                f"`params` must be {len(self._params0)} values of sizes "
                f"{[int(np.size(p)) for p in self._params0]}, as at the preparation; got "
                f"{len(ps)} of sizes {[int(np.size(p)) for p in ps]}")
        if state.program.guards is not None:  # f branches on its parameters: which branch
            state = for_params(self, state, ps)
        if self._verify and not self._agrees(state, xa, ps):
            with self._lock:  # (another thread may have prepared for other arguments)
                if self._state is state or not _same_args(self._state, state.args,
                                                          state.kwargs):
                    self._prepare(state.args, state.kwargs, ps)
                state = for_params(self, self._state, ps)
            if not self._agrees(state, xa, ps, tolerate=True):
                raise TraceMismatchError(
                    f"`{self._name}` does not compute the same value from the same x: the "
                    "recorded program disagrees with a real call even right after preparing "
                    "again; f must be a deterministic function of x and its arguments")
        return state

    def _agrees(self, state: _State, x: np.ndarray, params: Sequence[Any],
                tolerate: bool = False) -> bool:
        """Whether the recording still computes ``f``, to rounding (:class:`Verifier`)."""
        prog = state.program
        replay = lambda at: (prog.out.value if prog.out.is_const else replay_value(  # noqa: E731
            prog, x=at, params=list(params) if prog.params else None)[prog.out.id])
        return self._check.agrees_scalar(state, x, params, replay) or (
            tolerate and self._check.tolerate_rounding(state, None, x, params, replay))

    def __call__(self, x: Any, *args: Any) -> sp.csr_array:
        """The Hessian at ``x`` as a new, exactly symmetric ``csr_array`` (``args``: to ``f``).

        Examples
        --------
        >>> import numpy as np
        >>> import sparsejac
        >>> hess = sparsejac.SparseHessian(lambda x: np.sum(np.exp(x)), np.zeros(2))
        >>> hess(np.zeros(2)).toarray()
        array([[1., 0.],
               [0., 1.]])
        """
        return self.evaluate(x, args=args or None)

    def evaluate(self, x: Any, *, params: Sequence[Any] | None = None,
                 args: Sequence[Any] | None = None, format: str = "csr"
                 ) -> sp.csr_array | sp.csc_array:
        """The Hessian at ``x`` with new ``params`` values (and, if given, ``args``).

        Examples
        --------
        >>> import numpy as np
        >>> import sparsejac
        >>> hess = sparsejac.SparseHessian(lambda x, s: s * np.sum(x ** 3), np.ones(2),
        ...                                params=(1.0,))
        >>> hess.evaluate(np.ones(2), params=(2.0,)).toarray()
        array([[12.,  0.],
               [ 0., 12.]])
        """
        if format not in ("csr", "csc"):
            raise ValueError(f"`format` must be 'csr' or 'csc'; got {format!r}")
        state = self._use_args(None if args is None else tuple(args))
        data, _, state = self._data(x, params, state)
        # H[i, j] and H[j, i] come from different products or paths, equal to rounding: the
        # lower one is copied onto the upper, so that the matrix is exactly symmetric
        return state.plan.matrix(data[state.mirror], format)

    def gradient(self, x: Any, *args: Any, params: Sequence[Any] | None = None) -> np.ndarray:
        """The gradient of ``f`` at ``x`` (reverse mode on the recorded program), ``x``'s shape.

        A drop-in ``jac=`` for ``scipy.optimize.minimize``.

        Examples
        --------
        >>> import numpy as np
        >>> import sparsejac
        >>> hess = sparsejac.SparseHessian(lambda x: np.sum(x ** 2), np.ones(3))
        >>> hess.gradient(np.array([1.0, 2.0, 3.0]))
        array([2., 4., 6.])
        """
        state = self._use_args(tuple(args) if args else None)
        xa = check_x(x, self._x0.shape, of="this Hessian")
        ps = self._params0 if params is None else check_params(params, like=self._params0)
        check_flat_x(self, x, xa, state, ps, "this Hessian")
        g = gradient_call(self._checked_state(xa, ps, state).program)(xa, *ps)
        return np.asarray(g, dtype=np.float64).reshape(self._x0.shape)

    def hessp(self, x: Any, p: Any, *args: Any, params: Sequence[Any] | None = None
              ) -> np.ndarray:
        """``H(x) @ p``: a drop-in ``hessp=`` for ``Newton-CG``, ``trust-ncg``, ``trust-krylov``.

        A Hessian that is not recorded (dense: its products walk the gradient's program,
        ``stats()["engine"]["engine"] == "replay"``) is not computed for the first products
        asked for at a new ``x``: they are computed one at a time, each one forward pass over
        the recorded gradient (forward-over-reverse); once they number an eighth of the
        Hessian's own products (:data:`HESSP_RENT_SHARE`), the Hessian at ``x`` is computed
        and kept, and every further product there is a sparse product. A recorded Hessian
        costs two or three gradients and is computed at the first product. An inner
        conjugate-gradient loop that stops after a few products at each ``x`` (``trust-ncg``
        on a dense Hessian) pays for those products, not for the Hessian; one that asks for
        many pays for the Hessian once. The rule counts products, so the same calls take the
        same route on every machine.

        Examples
        --------
        >>> import numpy as np
        >>> import sparsejac
        >>> hess = sparsejac.SparseHessian(lambda x: np.sum(x[1:] * x[:-1]), np.ones(3))
        >>> hess.hessp(np.ones(3), np.array([1.0, 0.0, 0.0]))
        array([0., 1., 0.])
        """
        state = self._use_args(tuple(args) if args else None)
        xa = check_x(x, self._x0.shape, of="this Hessian")
        ps = self._params0 if params is None else check_params(params, like=self._params0)
        check_flat_x(self, x, xa, state, ps, "this Hessian")
        key = xa.tobytes()
        cache = self._cache
        state = self._checked_state(xa, ps, state)  # a kept H is stale once f has changed
        pa = check_real(p, "p", xa.size, " (x's size)")
        if cache is not None and cache[0] == key and _same(cache[1], ps) and cache[3] is state:
            h = cache[2]
        elif self._rented(key, ps, state) and state.gradient_program is not None:
            self._hessp_counts[0] += 1
            gprog = state.gradient_program
            rent = self._rent
            assert rent is not None  # (set by _rented)
            if rent[4] is None:  # the gradient's values at x: one replay for every product
                self._rent = rent = (*rent[:4], Values(gprog, xa, ps).complete())
            _, t = program_jvp(gprog, pa.reshape((1, *gprog.x.shape)), values=rent[4])
            return np.asarray(t, dtype=np.float64).reshape(pa.shape)
        else:
            with np.errstate(all="ignore"):
                data, _ = state.plan.evaluate_with_value(xa, ps)
            h = sp.csr_array(state.plan.matrix(data[state.mirror], "csr"))
            self._hessp_counts[1] += 1
            kept = _kept(ps)  # copies: multipliers updated in place must not hit the cache
            self._cache = None if kept is None else (key, kept, h, state)
        return mul0_matmul(h, pa.reshape(-1, 1)).reshape(pa.shape)  # 0 * inf is 0 there

    def _rented(self, key: bytes, ps: Sequence[Any], state: _State) -> bool:
        """Whether this product at ``x`` (``key``) is computed alone (see :meth:`hessp`)."""
        rent = self._rent
        same = (rent is not None and rent[0] == key and _same(rent[1], ps)
                and rent[2] is state)
        count = (rent[3] if same and rent is not None else 0) + 1
        if (not isinstance(state.plan.engine, ReplayEngine)  # (a recorded program's H is
                or count * HESSP_RENT_SHARE > state.plan.n_products):  # cheap: 2-3 gradients)
            self._rent = None
            return False
        kept = _kept(ps)
        if kept is None:  # parameters that cannot be kept: nothing is reused
            self._rent = (b"", (), state, 0, None)
        else:
            self._rent = (key, kept, state, count,
                          rent[4] if same and rent is not None else None)
        return True

    def structure(self) -> tuple[np.ndarray, np.ndarray]:
        """``(rows, cols)`` of the lower triangle's nonzeros (``row >= col``), row by row.

        The fixed order of :meth:`values`: what interior-point solvers (IPOPT's
        ``hessianstructure``) take once.

        Examples
        --------
        >>> import numpy as np
        >>> import sparsejac
        >>> hess = sparsejac.SparseHessian(lambda x: np.sum(x[1:] * x[:-1]), np.ones(3))
        >>> hess.structure()
        (array([1, 2]), array([0, 1]))
        >>> hess.values(np.ones(3))
        array([1., 1.])
        """
        state = self._state
        pat = self._shown = state.plan.pattern
        return (np.asarray(pat.rows[state.lower], dtype=np.int64),
                np.asarray(pat.indices[state.lower], dtype=np.int64))

    def values(self, x: Any, *, params: Sequence[Any] | None = None) -> np.ndarray:
        """The lower triangle's values at ``x`` in the order of :meth:`structure`."""
        data, _, state = self._data(x, params, self._use_args(None))
        check_structure(self, state.plan.pattern, state.program.guards)
        return np.ascontiguousarray(data[state.lower])

    # -- reporting -------------------------------------------------------------------------

    def stats(self) -> dict[str, Any]:
        """Figures of the preparation.

        Returns
        -------
        dict
            ``shape``, ``nnz``, ``method``, ``partition`` and ``reason`` (the colouring
            used: symmetric, or column when that has fewer colours), ``n_products``
            (Hessian-vector products per Hessian), ``colors_column`` and
            ``colors_symmetric`` (natural-order colourings of each kind, for comparison),
            ``lower_bound`` (no symmetric colouring of the pattern has fewer colours),
            ``seconds``, ``engine``, and ``hessp``: how :meth:`hessp` answered so far
            (``single_products`` computed one at a time, ``hessians`` computed and kept).

        Examples
        --------
        >>> import numpy as np
        >>> import sparsejac
        >>> s = sparsejac.SparseHessian(lambda x: np.sum(x[1:] * x[:-1]), np.ones(5)).stats()
        >>> s["n_products"], s["lower_bound"]   # no diagonal: a column colouring wins
        (2, 2)
        """
        plan = self._plan
        pat = plan.pattern
        return {
            "shape": list(pat.shape),
            "nnz": int(pat.nnz),
            "method": self._method,
            "partition": plan.coloring.partition,
            "reason": plan.reason,
            "n_products": int(plan.coloring.n_colors),
            "colors_column": int(color(pat, "column", "natural").n_colors),
            "colors_symmetric": int(color(pat, "symmetric", "natural",
                                          method=self._method).n_colors),
            "lower_bound": int(min(plan.coloring.lower_bound, color(
                pat, "symmetric", "natural", method=self._method).lower_bound)),
            "seconds": dict(plan.seconds),
            "engine": plan.engine.stats(),
            "path": (plan.engine.stats() or {}).get("path"),
            "preparations": self._n_prepared,
            "hessp": {"single_products": self._hessp_counts[0],
                      "hessians": self._hessp_counts[1]},
        }

    def __repr__(self) -> str:
        n = self._plan.shape[0]
        return (f"SparseHessian({self._name}, n={n}, nnz={self._plan.pattern.nnz:,}, "
                f"{self._method} colouring: {self.n_products} Hessian-vector products instead "
                f"of {n:,})")


def _same(a: Sequence[Any], b: Sequence[Any]) -> bool:
    """Whether the kept parameter values ``a`` (:func:`_kept`) equal ``b``, value for value."""
    if len(a) != len(b):
        return False
    return all(np.shape(x) == np.shape(y) and np.asarray(x).dtype == np.asarray(y).dtype
               and np.array_equal(x, y) for x, y in zip(a, b, strict=True))


def _kept(ps: Sequence[Any]) -> tuple[Any, ...] | None:
    """Copies of parameter values to compare later calls with; None for other objects."""
    out = []
    for p in ps:
        if isinstance(p, (np.ndarray, np.generic, float, int, bool, complex)):
            out.append(np.array(p, copy=True))
        else:  # an object that may change in place unseen: no cache
            return None
    return tuple(out)
