"""The one pipeline: detect, colour, choose the mode, prepare an engine, evaluate.

:func:`prepare` is the single preparation path behind :func:`sparsejac.jacobian`,
:class:`sparsejac.SparseJacobian`, the solver adapters and the reports. It returns a frozen
:class:`Plan`: the pattern, the colouring of every candidate mode, the chosen mode and why,
and the *engine* that computes the Jacobian's values:

* ``prepared`` -- the recorded program linearised once (:class:`~sparsejac.ad.PreparedProgram`),
  replayed at every ``x`` (a global trace);
* ``eager`` -- the eager interpreters on the trace at its own point (a one-off Jacobian);
* ``retrace`` -- ``f`` traced again at every ``x`` (it branches on values; a user pattern
  covers every branch);
* ``fd`` -- compressed finite differences (approximate; black-box ``f``).

**Mode choice.** ``mode="auto"`` colours the column, row and bidirectional partitions and
picks the lowest cost ``forward products + reverse_cost × reverse products`` (ties: forward,
then reverse, then mixed; a bidirectional colouring that is one-sided is that mode). It reads
no clock, so the choice is the same on every machine. ``calibrate=True`` (opt-in) times the
candidates at ``x0`` instead and keeps the fastest.
"""

from __future__ import annotations

import functools
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp

from sparsejac import fd as _fd
from sparsejac import kernels
from sparsejac.ad import PreparedProgram
from sparsejac.coloring import DEFAULT_REVERSE_COST, ColoringResult, greedy, partition_cost
from sparsejac.coloring.budget import prepared_effort
from sparsejac.coloring.by_mode import (
    ONE_SHOT_FEW,
    ONE_SHOT_IDENTITY,
    ONE_SHOT_IDENTITY_ROWS,
    ONE_SHOT_MANY,
    ONE_SHOT_SLACK,
    colour_modes,
    identity_colouring,
    one_shot_colour,
    one_sided_as_mixed,
)
from sparsejac.detection import program_sparsity
from sparsejac.engines import (
    TAPE_WORK_PER_NODE,
    EagerEngine,
    Engine,
    FdEngine,
    PreparedEngine,
    ReplayEngine,
    RetraceEngine,
    _groups,
    _tape_by_rule,
    choose_engine,
    mend_non_finite,
    replays_dense,
    trace_for_plan,
)
from sparsejac.errors import (
    TracedConversionError,
    UnsupportedPrimitiveError,
    with_hint,
)
from sparsejac.memory import TRIM_NNZ, preparation_heap, return_freed_memory
from sparsejac.pattern import SparsityPattern, as_pattern
from sparsejac.tracing import Program, no_cyclic_gc
from sparsejac.tracing.guards import ParamGuards
from sparsejac.tracing.program import check_ties
from sparsejac.validation import check_compressed_size, check_subset

__all__ = [
    "CALIBRATION_MARGIN",
    "CALIBRATION_REPEATS",
    "CALIBRATION_WINDOW",
    "CANDIDATE_MODES",
    "ONE_SHOT_FEW",
    "ONE_SHOT_IDENTITY",
    "ONE_SHOT_IDENTITY_ROWS",
    "ONE_SHOT_MANY",
    "ONE_SHOT_SLACK",
    "TAPE_WORK_PER_NODE",
    "Plan",
    "PlanView",
    "SavedPlan",
    "choose_engine",
    "fd_evaluations",
    "index_dtype",
    "prepare",
]

#: The exact modes ``auto`` compares, in its order of preference on equal cost.
CANDIDATE_MODES: tuple[str, ...] = ("forward", "reverse", "mixed")
#: Repeats of each candidate evaluation when ``calibrate=True`` (the minimum is kept).
CALIBRATION_REPEATS = 3
#: With ``calibrate=True``, a later mode must be faster by more than this fraction to win.
CALIBRATION_MARGIN = 0.1
#: With ``calibrate=True``, only the modes whose cost is within this factor of the lowest
#: are timed.
CALIBRATION_WINDOW = 4.0


def fd_evaluations(method: str, p: int) -> int:
    """Evaluations of ``f`` per finite-difference Jacobian with ``p`` column groups.

    Examples
    --------
    >>> from sparsejac.pipeline import fd_evaluations
    >>> fd_evaluations("2-point", 3), fd_evaluations("3-point", 3), fd_evaluations("cs", 3)
    (4, 6, 3)
    """
    return {"2-point": p + 1, "3-point": 2 * p}.get(method, p)


@dataclass(frozen=True)
class Plan:
    """Everything a Jacobian needs to be evaluated: pattern, colourings, mode, engine.

    Attributes
    ----------
    pattern : SparsityPattern
        The pattern used (detected, or the user's).
    colorings : dict
        The colouring of every candidate mode.
    mode : str
        The chosen mode (never ``"auto"``).
    reason : str
        Why it was chosen.
    costs : dict
        Per candidate mode: ``forward products + reverse_cost × reverse products``.
    engine : Engine
        What computes the values.
    effort : float
        The colouring search's effort.
    seconds : dict
        ``detection``, ``coloring``, ``preparation`` (the engine) and, with calibration,
        ``calibration`` (seconds per timed mode).

    Examples
    --------
    >>> import numpy as np
    >>> from sparsejac.pipeline import prepare
    >>> plan = prepare(lambda x: np.concatenate([x ** 2, [x.sum()]]), np.ones(4))
    >>> plan.mode, plan.costs
    ('reverse', {'forward': 4.0, 'reverse': 2.0, 'mixed': 2.0})
    >>> plan.matrix(plan.evaluate(np.arange(4.0))).toarray()
    array([[0., 0., 0., 0.],
           [0., 2., 0., 0.],
           [0., 0., 4., 0.],
           [0., 0., 0., 6.],
           [1., 1., 1., 1.]])
    """

    pattern: SparsityPattern
    colorings: dict[str, ColoringResult]
    mode: str
    reason: str
    costs: dict[str, float]
    engine: Engine
    effort: float
    seconds: dict[str, Any] = field(default_factory=dict)
    #: effort of a colour search deferred until calls have paid for it (0: none; deferred_search)
    pending: float = 0.0
    #: nominal work of one call (nominal nanoseconds, the unit of the colouring budget)
    call_work: float = 0.0
    #: what the deferred search needs: (candidate modes, order, reverse_cost)
    search_args: tuple[Any, ...] = ()
    #: the branches ``f`` took on values of its parameters alone (``if t < t1:``): the plan
    #: holds for parameter values where they are taken again (``None``: no such branch)
    guards: ParamGuards | None = None
    #: attributes of the first matrix built, per class (see :meth:`matrix`)
    _matrices: dict[Any, tuple[dict[str, Any], np.ndarray, np.ndarray]] = field(
        default_factory=dict, repr=False, compare=False)
    #: the modes whose compressed sizes were checked (:func:`check_compressed_size`)
    _sized: set[str] = field(default_factory=set, init=False, repr=False, compare=False)

    @property
    def coloring(self) -> ColoringResult:
        """The colouring of the chosen mode."""
        return self.colorings[self.mode]

    @property
    def n_products(self) -> int:
        """Products per Jacobian: JVPs, VJPs, both, (fd) evaluations of ``f``, or 0 (direct).

        Finite differences evaluate ``f`` ``p + 1`` times with ``"2-point"`` (the base point
        too), ``2p`` times with ``"3-point"`` and ``p`` times with ``"cs"``, for ``p`` colours;
        entries assembled directly take no product (the colouring is not used).
        """
        p = int(self.coloring.n_colors)
        if isinstance(self.engine, FdEngine):
            return fd_evaluations(self.engine.method, p)
        return 0 if getattr(self.engine, "direct", None) is not None else p

    @property
    def shape(self) -> tuple[int, int]:
        """``(m, n)``."""
        return self.pattern.shape

    def evaluate(self, x: np.ndarray, params: Sequence[Any] = (),
                 out: np.ndarray | None = None) -> np.ndarray:
        """J's nonzeros at ``x`` (a checked float64 array of ``x0``'s shape), CSR order."""
        return self._evaluate_mode(self.mode, x, params, out)[0]

    def evaluate_with_value(self, x: np.ndarray, params: Sequence[Any] = (),
                            out: np.ndarray | None = None) -> tuple[np.ndarray, Any]:
        """J's nonzeros, and the replayed value of ``f(x)`` (None if the engine called f)."""
        return self._evaluate_mode(self.mode, x, params, out)

    @property
    def replays(self) -> bool:
        """Whether the engine replays a recorded program (rather than calling ``f``)."""
        return isinstance(self.engine, PreparedEngine)

    def replay_value(self, x: np.ndarray, params: Sequence[Any] = ()) -> Any:
        """The recorded program's value at ``x`` (only for an engine that replays)."""
        assert isinstance(self.engine, PreparedEngine)
        return self.engine.program.value(x, params=params)

    def _evaluate_mode(self, mode: str, x: np.ndarray, params: Sequence[Any],
                       out: np.ndarray | None) -> tuple[np.ndarray, Any]:
        c = self.colorings[mode]
        if mode not in self._sized:
            if mode != "fd":
                _, p, _, q = _groups(c)
                check_compressed_size(mode, self.pattern.shape, p, q)
            self._sized.add(mode)
        return mend_non_finite(self.engine, mode, self.engine.evaluate(mode, c, x, params, out),
                               x, params, self.colorings, self.pattern)

    def matrix(self, data: np.ndarray, format: str = "csr") -> sp.csr_array | sp.csc_array:
        """A new ``csr_array`` (or ``csc_array``) holding ``data`` (CSR order) on the pattern.

        Its index arrays are its own (every in-place scipy method works on it, and changing
        it changes nothing here) and int32 where they fit, as scipy makes them; ``data`` is
        used as it is for CSR, gathered once into CSC order (no sort) for CSC.
        """
        pat = self.pattern
        if format == "csc":
            return _new_matrix(sp.csc_array, pat, data[pat.csc_to_csr], pat.col_indices,
                               pat.col_indptr, self._matrices)
        return _new_matrix(sp.csr_array, pat, data, pat.indices, pat.indptr, self._matrices)


_STATE_KEYS = frozenset({"_shape", "maxprint", "indices", "indptr", "data"})
#: a plan keeps converted index arrays to copy for patterns of at most this many nonzeros
_KEEP_INDICES = 4096


def _new_matrix(cls: Any, pat: SparsityPattern, data: np.ndarray, indices: np.ndarray,
                indptr: np.ndarray, cache: dict[Any, tuple[dict[str, Any], np.ndarray, np.ndarray]]
                ) -> Any:
    """A canonical ``cls`` matrix with ``data`` and its own copies of the index arrays.

    The first matrix of a plan goes through scipy's checks; the next ones copy its other
    attributes (``cache``, per plan and class): scipy validates its arrays at every
    construction, tens of microseconds that would dominate a small Jacobian.
    """
    hit = cache.get(cls)
    if hit is not None:
        state, idx0, ptr0 = hit
        out = cls.__new__(cls)
        attrs = out.__dict__
        attrs.update(state)
        if idx0.size:  # small: copies of converted arrays kept for the purpose
            attrs["data"], attrs["indices"], attrs["indptr"] = data, idx0.copy(), ptr0.copy()
        else:  # large: no second copy of the indices resident, the dtype alone
            attrs["data"] = data
            attrs["indices"], attrs["indptr"] = indices.astype(idx0.dtype), indptr.astype(
                idx0.dtype)
        return out
    dtype = index_dtype(pat)
    idx, ptr = indices.astype(dtype), indptr.astype(dtype)
    out = cls((data, idx, ptr), shape=pat.shape, copy=False)
    out.has_sorted_indices = True
    out.has_canonical_format = True
    if set(out.__dict__) >= _STATE_KEYS:
        small = pat.nnz <= _KEEP_INDICES
        cache[cls] = ({k: v for k, v in out.__dict__.items()
                       if k not in ("data", "indices", "indptr")},
                      idx.copy() if small else idx[:0], ptr.copy() if small else ptr[:0])
    return out


def index_dtype(pattern: SparsityPattern) -> type[np.signedinteger[Any]]:
    """int32 when every index and pointer of ``pattern`` fits (scipy's own choice), else int64.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsejac.pattern import as_pattern
    >>> from sparsejac.pipeline import index_dtype
    >>> index_dtype(as_pattern(np.eye(3))).__name__
    'int32'
    """
    big = max(pattern.nnz, *pattern.shape)
    return np.int32 if big < _INT32_MAX else np.int64


_INT32_MAX = int(np.iinfo(np.int32).max)


def _check_fd_shape(pattern: SparsityPattern, call: Callable[..., Any], x0: np.ndarray,
                    params: Sequence[Any]) -> np.dtype[Any]:
    """A trusted pattern must have the Jacobian's shape (checked now); f(x0)'s dtype."""
    y0 = _fd.evaluate_output(lambda z: call(z, *params), x0)
    m = y0.size
    if pattern.shape != (m, x0.size):
        raise ValueError(
            f"`sparsity` has shape {pattern.shape} but the Jacobian of f has shape "
            f"{(m, x0.size)} (f(x0) has {m} values, x0 has {x0.size})")
    return y0.dtype


def _check_trusted(call: Callable[..., Any], x0: np.ndarray, params: Sequence[Any],
                   coloring: ColoringResult, bounds: Any) -> None:
    """Refuse a trusted pattern that misses entries, naming them."""
    entries, rows = _fd.missing_entries(lambda z: call(z, *params), x0, coloring, bounds=bounds)
    if entries or rows:
        shown = ", ".join(map(str, entries[:10])) + (" ..." if len(entries) > 10 else "")
        extra = (f"; rows {rows[:10]}{' ...' if len(rows) > 10 else ''} miss entries whose "
                 "columns could not be told apart") if rows else ""
        raise ValueError(
            f"`sparsity` misses entries of the Jacobian that finite-difference probes of f "
            f"see at x0: {shown or 'none identified'}{extra}. Add them (and check the rows "
            "again: a row may miss more than one); finite differences with this pattern "
            "would attribute them to other entries.")


class PlanView:
    """What an object evaluating a :class:`Plan` shows of it (its current ``_plan``).

    Examples
    --------
    >>> import numpy as np
    >>> from sparsejac.pipeline import PlanView, prepare
    >>> class Shown(PlanView):
    ...     @property
    ...     def _plan(self):
    ...         return prepare(lambda x: x[1:] * x[:-1], np.ones(4))
    >>> Shown().mode, Shown().n_products, Shown().sparsity.nnz
    ('forward', 2, 6)
    """

    @property
    def _plan(self) -> Plan:
        raise NotImplementedError

    @property
    def sparsity(self) -> sp.csr_array:
        """The pattern in use, as a boolean ``csr_array`` (follows a new preparation).

        Where ``f`` branched in Python on its parameters (an ODE's ``if t < t1:``), this is
        the pattern of the branch taken at the preparation's parameters: another branch may
        have other nonzeros, and reading it warns (``RuntimeWarning``), since a tool given it
        as the pattern for every parameter (``solve_ivp``'s ``jac_sparsity=``) would miss
        them. sparsejac's own Jacobians prepare each branch.
        """
        plan = self._plan
        if plan.guards is not None:
            import warnings

            from sparsejac.engines import user_stacklevel

            warnings.warn(
                "this is the pattern of the branch f took at the preparation's parameters "
                f"({plan.guards.describe().strip()}): where they take another branch, f may "
                "have other nonzeros. Do not give it to another tool as the pattern for every "
                "parameter (solve_ivp's jac_sparsity=, say): take the union of the patterns "
                "at parameters that cover every branch (sparsejac.jacobian_sparsity of f at "
                "each), or use sparsejac's Jacobian itself, which prepares each branch.",
                RuntimeWarning, stacklevel=user_stacklevel())
        return plan.pattern.to_csr_array()

    @property
    def mode(self) -> str:
        """The chosen mode."""
        return self._plan.mode

    @property
    def reason(self) -> str:
        """Why the mode was chosen."""
        return self._plan.reason

    @property
    def coloring(self) -> ColoringResult:
        """The colouring of the chosen mode."""
        return self._plan.coloring

    @property
    def n_products(self) -> int:
        """Compressed products per Jacobian (or evaluations of ``f`` for ``fd``)."""
        return self._plan.n_products


@dataclass(frozen=True, eq=False)
class SavedPlan:
    """A plan's pattern, colourings and mode, as :func:`sparsejac.load` restores them.

    Given as ``sparsity=`` to :func:`prepare`, it is the pattern (the detected one must
    lie in it, as for any given pattern) and its colourings are used as they are: no
    colouring, no search, the saved mode.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsejac.pipeline import SavedPlan, prepare
    >>> f = lambda x: x[1:] * x[:-1]
    >>> first = prepare(f, np.ones(5))
    >>> saved = SavedPlan(first.pattern, first.colorings, first.mode, first.reason,
    ...                   first.costs, first.effort)
    >>> again = prepare(f, np.ones(5), sparsity=saved)
    >>> again.mode == first.mode, again.coloring is first.coloring
    (True, True)
    """

    pattern: SparsityPattern
    colorings: dict[str, ColoringResult]
    mode: str
    reason: str
    costs: dict[str, float]
    effort: float


def _paused_gc(fn: Callable[..., Plan]) -> Callable[..., Plan]:
    """Run ``fn`` with the cyclic garbage collector paused (see ``no_cyclic_gc``).

    A preparation for many unknowns reuses the memory its temporaries free while it runs
    (:func:`preparation_heap`); after a large one (:data:`TRIM_NNZ` nonzeros or more) that
    memory is handed back to the operating system (:func:`return_freed_memory`).
    """

    @functools.wraps(fn)
    def run(*args: Any, **kwargs: Any) -> Plan:
        x0 = args[1] if len(args) > 1 else kwargs.get("x0", ())
        with no_cyclic_gc(), preparation_heap(int(np.size(x0))):
            plan = fn(*args, **kwargs)
        if plan.pattern.nnz >= TRIM_NNZ:
            return_freed_memory()
        return plan

    return run


@_paused_gc
def prepare(
    call: Callable[..., Any],
    x0: np.ndarray,
    *,
    params: Sequence[Any] = (),
    name: str = "f",
    sparsity: Any = None,
    mode: str = "auto",
    order: Any = "best",
    effort: float | None = None, time_budget: float | None = None,
    fd_method: str = "2-point",
    calibrate: bool = False,
    reverse_cost: float = DEFAULT_REVERSE_COST,
    one_shot: bool = False,
    check: bool = False,
    engine: str = "auto",
    workers: Any = None,
    bounds: tuple[np.ndarray, np.ndarray] | None = None,
    defer: bool = False,
    traced: tuple[Program, sp.csr_array] | None = None,
    width: int | None = None,
) -> Plan:
    """Detect, colour, choose the mode and build the engine for ``call(x, *params)``.

    Arguments are checked by the caller (:mod:`sparsejac.validation`).

    Parameters
    ----------
    call : callable
        ``call(x, *params) -> array``: ``f`` with its constant arguments bound.
    x0 : ndarray
        The representative point (float64).
    params : sequence
        Traced, non-differentiated inputs (an ODE's ``t``) at the preparation.
    name : str
        Name of ``f`` in messages.
    sparsity : optional
        A user pattern (must contain the detected one, except for ``fd``).
    mode, order, effort, time_budget, fd_method, calibrate, reverse_cost
        As for :class:`sparsejac.SparseJacobian`; ``effort=None`` is the default for the
        plan's kind (:func:`~sparsejac.coloring.budget.prepared_effort`, or 0 one-off).
    one_shot : bool
        A plan for one Jacobian at ``x0``: no search beyond the mandatory colouring passes,
        the eager interpreters on the trace, a local trace when ``f`` branches on values.
    check : bool
        With ``mode="fd"`` and a user ``sparsity``: probe ``f`` with a few dense finite
        differences and refuse the pattern if it misses entries, naming them
        (:func:`sparsejac.fd.missing_entries`).
    engine : {"auto", "tape", "chain"}
        What evaluates the recorded program in the exact modes (:func:`choose_engine`).
    workers, bounds : optional
        Where ``mode="fd"`` evaluates ``f`` (:func:`~sparsejac.fd.worker_map`), within the flat
        ``(lb, ub)`` (:func:`~sparsejac.fd.bounded_steps`).
    defer : bool
        Leave the colour search of a prepared Jacobian (default ``effort`` and ``order``,
        ``mode="auto"``) for later, when calls have paid for it (:func:`deferred_search`):
        the plan starts with one-pass colourings (natural-order ones where they are good).
    traced : (Program, csr_array), optional
        ``call`` already traced (globally) at ``x0``, with its detected pattern: neither is
        computed again (:class:`sparsejac.SparseHessian` traces its gradient program first).
    width : int, optional
        The seed directions the engine is built for, where the caller seeds with another
        colouring than the plan's (a Hessian's symmetric one); default: the plan's fewest.

    Returns
    -------
    Plan

    Examples
    --------
    >>> import numpy as np
    >>> import sparsejac
    >>> from sparsejac.pipeline import prepare
    >>> plan = prepare(lambda x: x[1:] * x[:-1], np.ones(4))
    >>> plan.mode, plan.n_products, plan.engine.kind
    ('forward', 2, 'prepared')
    >>> plan.matrix(plan.evaluate(np.arange(4.0))).toarray()
    array([[1., 0., 0., 0.],
           [0., 2., 1., 0.],
           [0., 0., 3., 2.]])
    """
    seconds: dict[str, Any] = {}
    saved = sparsity if isinstance(sparsity, SavedPlan) else None
    if saved is not None:
        sparsity = saved.pattern
    t0 = time.perf_counter()
    program: Program | None = None
    retrace, fd_dtype = False, None
    if sparsity is not None and mode == "fd":
        pattern = as_pattern(sparsity, name="sparsity")
        fd_dtype = _check_fd_shape(pattern, call, x0, params)
    elif traced is not None:
        program, local = traced[0], False
        pattern = as_pattern(traced[1]) if sparsity is None else as_pattern(sparsity)
        if sparsity is not None:
            check_subset(traced[1], pattern)
    else:
        try:
            program, local = trace_for_plan(call, x0, params, name, sparsity, one_shot)
        except (UnsupportedPrimitiveError, TracedConversionError) as exc:
            if mode == "fd":  # finite differences need no trace, only a pattern
                raise with_hint(exc, " mode='fd' without `sparsity=` detects the pattern by "
                                "tracing f, which failed here: pass `sparsity=` (the pattern, "
                                "from what you know of f) to use finite differences on a "
                                "black-box f.") from exc
            raise
        retrace = program is None
        if program is not None and mode != "fd":
            check_ties(program)  # derivatives of a special case taken at exactly this x
        if program is None:
            pattern = as_pattern(sparsity, name="sparsity")
        else:
            detected = program_sparsity(program, local=local)
            if 0 in detected.shape and not one_shot:
                raise ValueError(f"`{name}` returns an empty array at x0: nothing to prepare")
            if sparsity is None:
                pattern = as_pattern(detected) if detected.nnz else \
                    SparsityPattern(detected.shape, [], [])
            else:
                pattern = as_pattern(sparsity, name="sparsity")
                check_subset(detected, pattern)
            del detected  # (int64 indices: the pattern keeps its own int32 copy)
    seconds["detection"] = time.perf_counter() - t0
    # a preparation the fallback paths' budget cannot cover loads the compiled kernels at once
    kernels.expect((PREPARATION_UNITS_PER_NONZERO + greedy.first_fit_units()) * pattern.nnz
                   + _tape_calls_units(program, pattern, engine, one_shot))

    t0 = time.perf_counter()
    modes = list(CANDIDATE_MODES) if mode == "auto" else [mode]
    # A program that may be assembled directly (mode="auto", the chain engine) gets the
    # mandatory colouring passes first; the search runs only if it turns out not to be.
    defer_search = (effort is None and mode == "auto" and not one_shot and engine != "tape"
                    and program is not None and not program.value_dependent
                    and time_budget is None and isinstance(order, str) and order == "best")
    colorings: dict[str, ColoringResult] | None = None
    if saved is not None:  # restored: the saved colourings and mode, no search
        colorings, modes, effort, defer_search = dict(saved.colorings), [saved.mode], \
            saved.effort, False
    if colorings is None and (one_shot and effort is None and mode == "auto" and time_budget is None
            and isinstance(order, str) and order == "best"):
        m, n = pattern.shape
        if n <= ONE_SHOT_IDENTITY and m <= ONE_SHOT_IDENTITY_ROWS:
            colorings, modes = {"forward": identity_colouring(pattern)}, ["forward"]
        else:
            colorings = one_shot_colour(pattern, reverse_cost, program, 1.0)
            modes = ["forward", "reverse"] if colorings is not None else list(CANDIDATE_MODES)
    if effort is None:
        effort = 0.0 if one_shot else prepared_effort(pattern.nnz)
    if colorings is None and defer_search:
        # a program that may be assembled directly first gets natural-order colourings, one
        # pass per partition, when they are good (as for a one-off Jacobian): they size its
        # engine, and suffice if J then needs no seeds
        natural = one_shot_colour(pattern, reverse_cost, program)
        if natural is not None:
            natural["mixed"] = one_sided_as_mixed(natural, reverse_cost)
            colorings = natural
    if colorings is None:  # (deferred: the mandatory passes, effort 0)
        colorings = colour_modes(pattern, modes, order, 0.0 if defer_search else effort,
                            time_budget, reverse_cost)
    seconds["coloring"] = time.perf_counter() - t0

    if check and mode == "fd" and sparsity is not None:
        _check_trusted(call, x0, params, colorings["fd"], bounds)

    t0 = time.perf_counter()
    runner: Engine
    pending = call_work = 0.0
    if mode == "fd":
        runner = FdEngine(call, fd_method, pattern.shape[0], workers=workers, bounds=bounds,
                          out_dtype=fd_dtype if program is None else program.out.dtype)
    elif retrace:
        runner = RetraceEngine(call, pattern, name)
    elif one_shot or (program is not None and program.value_dependent):
        assert program is not None
        runner = EagerEngine(program)
    elif engine == "auto" and program is not None and replays_dense(pattern) and not \
            _tape_by_rule(program, width or min(c.n_colors for c in colorings.values()))[0]:
        program.release_values()  # (a dense Jacobian: nothing recorded, see ReplayEngine)
        runner = ReplayEngine(program)
    else:
        assert program is not None
        width = max(width or min(c.n_colors for c in colorings.values()), 1)
        # the engines replay: the trace-point values of intermediates are dead weight already
        # while they are built (a preparation's peak memory); so are the pattern's CSC arrays
        # once the colourings are made (rebuilt if decompression or CSC output needs them)
        program.release_values()
        pattern.release_csc()
        prepared = choose_engine(program, width, engine)
        direct = None
        in_order = False
        if mode == "auto" and isinstance(prepared, PreparedProgram):
            # entries exactly the pattern's nonzeros, in its CSR order: no positions to keep
            in_order = prepared.in_pattern_order(pattern.indptr, pattern.indices)
            if not in_order:
                direct = prepared.direct_positions(pattern.rows, pattern.indices)
        if in_order:  # no seeds, no decompression: only the CSR arrays stay resident
            assert isinstance(prepared, PreparedProgram)
            prepared.share_pattern(pattern.indptr, pattern.indices)
            direct = np.zeros(0, np.int64)  # the direct path, positions not needed
        elif isinstance(prepared, PreparedProgram):
            prepared.decode_output()
        runner = PreparedEngine(prepared, direct=direct, nnz=pattern.nnz, in_order=in_order)
        program.release_values()  # and the caches its rules built while linearising
        if defer_search:
            if direct is None and defer and not calibrate:  # the search waits for calls
                pending, effort = effort, 0.0
                # (where the natural colourings were good, one pass per one-sided
                # partition, the mandatory passes and the bicolouring, which may load numba
                # and cost more than a few Jacobians, wait for the search too)
                elements = sum(nd.out.size for nd in program.nodes) + program.n_in
                call_work = NS_PER_ELEMENT * elements * (width + 1)
            elif direct is None:  # the colours matter: the mandatory passes and the search
                t1 = time.perf_counter()
                colorings = colour_modes(pattern, modes, order, effort, time_budget, reverse_cost)
                seconds["coloring"] += time.perf_counter() - t1
            else:
                effort = 0.0  # direct assembly uses no seeds: a search could not pay off
    seconds["preparation"] = time.perf_counter() - t0

    costs = {m: partition_cost(c, reverse_cost) for m, c in colorings.items()}
    guards = None if program is None else program.guards
    if saved is not None:
        return Plan(pattern, colorings, saved.mode, saved.reason, dict(saved.costs), runner,
                    float(saved.effort), seconds, guards=guards)
    chosen, reason, timed = _choose(modes, colorings, costs, reverse_cost,
                                    calibrate and not one_shot, runner, pattern, x0, params)
    if timed:
        seconds["calibration"] = timed
    if isinstance(runner, PreparedEngine) and runner.in_order:
        pattern.release_csc()  # assembled directly: the CSC arrays are rebuilt if ever used
    return Plan(pattern, colorings, chosen, reason, costs, runner, float(effort), seconds,
                pending=float(pending), call_work=float(call_work),
                search_args=(tuple(modes), order, reverse_cost) if pending else (),
                guards=guards)


#: Calls of a prepared tape charged to the fallback budget when it is prepared: a prepared
#: Jacobian is made to be called again, and a tape whose calls before numba is loaded would
#: spend numba's start in this many (the numpy twin of a scalar loop of 10^4 operations,
#: 0.13-0.17 s a call where compiled it takes 1 ms) loads the kernels at once rather than
#: after paying that start in slow calls first.
TAPE_CALLS_CHARGED = 3


def _tape_calls_units(program: Program | None, pattern: SparsityPattern, engine: str,
                      one_shot: bool) -> int:
    """What a prepared tape's first calls would cost the fallback budget.

    :data:`TAPE_CALLS_CHARGED` calls of a tape that :func:`choose_engine` would likely
    choose, each as the cheaper of its numpy twin
    (:func:`~sparsejac.ad._tape_numpy.twin_units`) and, for a tape small enough
    (:data:`sparsejac.kernels.INTERPRET_BELOW`), its interpreted kernel: these serve its
    calls while the budget lasts (a short solve of a small tape never starts numba), the
    compiled kernel after; a tape whose first calls would spend the budget gets the
    compiled kernel from the start (:func:`sparsejac.kernels.expect`).

    The tape's work is estimated with the colouring's lower bound (the most nonzeros in a
    row), which the colours cannot undercut, and its instructions by the program's nodes.
    """
    if one_shot or program is None or engine == "chain" or kernels.loaded():
        return 0
    width = int(np.diff(pattern.indptr).max()) if pattern.nnz else 0
    by_rule, work = _tape_by_rule(program, width)
    if not (engine == "tape" or by_rule):
        return 0
    from sparsejac.ad._tape_numpy import twin_units

    per_call = twin_units(len(program.nodes), work)
    if work <= kernels.INTERPRET_BELOW:
        per_call = min(per_call, kernels.INTERPRET_WEIGHT * work)
    return TAPE_CALLS_CHARGED * per_call


#: Budget units (:mod:`sparsejac.kernels`, about 10 ns each) the fallback paths spend per
#: nonzero of J on a preparation after detection: 14-22 measured on Broyden's function
#: (n = 1,000 to 10^5) and the 2-D Brusselator (N = 32 to 128), where scipy's grouping serves
#: the natural first fit (:func:`~sparsejac.coloring.greedy.first_fit_units` adds the Python
#: first fit's where it does not).
PREPARATION_UNITS_PER_NONZERO = 25


#: Nominal nanoseconds per element operation and direction of a prepared call (the compiled
#: tape's order of magnitude), for the deferred search's accounting
#: (:mod:`sparsejac.deferred`).
NS_PER_ELEMENT = 1.0


def _choose(modes: list[str], colorings: dict[str, ColoringResult], costs: dict[str, float],
            reverse_cost: float, calibrate: bool, engine: Engine, pattern: SparsityPattern,
            x0: np.ndarray, params: Sequence[Any]) -> tuple[str, str, dict[str, float]]:
    """The mode, the reason, and the calibration timings (empty without calibration)."""
    if len(modes) == 1 and colorings[modes[0]].order == "identity":
        return modes[0], (f"one-off Jacobian of at most {ONE_SHOT_IDENTITY} columns and "
                          f"{ONE_SHOT_IDENTITY_ROWS} rows: forward mode, identity seeds (one "
                          "product per column, no colouring)"), {}
    if len(modes) == 1:
        return modes[0], f"mode={modes[0]!r} was requested", {}
    note = ""
    bi = colorings.get("mixed")
    if bi is None:
        note = "; one-off Jacobian: natural-order colourings, no mixed mode needed"
    sides = () if bi is None else (("forward", bi.n_reverse == 0),
                                   ("reverse", bi.n_forward == 0))
    for side, same in sides:
        assert bi is not None
        if same and colorings[side].n_colors <= bi.n_colors:
            # a one-sided bicolouring is that mode itself
            modes = [m for m in modes if m != "mixed"]
            note = f"; the mixed colouring is one-sided ({side} mode)"
            break
    if calibrate:
        floor = min(costs[m] for m in modes)
        timed_modes = [m for m in modes if costs[m] <= CALIBRATION_WINDOW * floor
                       and _fits(colorings[m], pattern)] or [min(modes, key=costs.__getitem__)]
        timed: dict[str, float] = {}
        plan_like = Plan(pattern, colorings, modes[0], "", costs, engine, 0.0)
        for m in timed_modes:
            best = math.inf
            for _ in range(CALIBRATION_REPEATS):
                t0 = time.perf_counter()
                plan_like._evaluate_mode(m, x0, params, None)
                best = min(best, time.perf_counter() - t0)
            timed[m] = best
        # the earliest of forward, reverse, mixed unless a later one is clearly faster
        chosen = timed_modes[0]
        for m in timed_modes[1:]:
            if timed[m] < timed[chosen] / (1.0 + CALIBRATION_MARGIN):
                chosen = m
        detail = ", ".join(f"{m} {timed[m] * 1e3:.3g} ms" if m in timed else
                           f"{m} not timed ({colorings[m].n_colors} products)" for m in modes)
        return chosen, f"fastest when timed at x0 ({detail}){note}", timed
    chosen = min(modes, key=lambda m: (costs[m], modes.index(m)))
    detail = ", ".join(f"{m} {_num(costs[m])}" for m in modes)
    return chosen, (f"lowest cost = forward products + {reverse_cost:g} x reverse products "
                    f"({detail}){note}"), {}


def _num(c: float) -> str:
    """A cost for the reason: an integer as one, otherwise four significant digits."""
    return str(int(c)) if float(c).is_integer() else f"{c:.4g}"


def _fits(c: ColoringResult, pattern: SparsityPattern) -> bool:
    _, p, _, q = _groups(c)
    try:
        check_compressed_size("auto", pattern.shape, p, q)
    except MemoryError:
        return False
    return True
