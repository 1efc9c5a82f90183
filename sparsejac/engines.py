"""The engines of a plan: what computes a Jacobian's values for a colouring.

:class:`PreparedEngine` replays a prepared program (the chain engine or the compiled tape, with
direct assembly where the program allows it); :class:`EagerEngine` runs the eager interpreters
on the trace (a one-off Jacobian); :class:`RetraceEngine` traces again at every point (a
value-dependent ``f``); :class:`FdEngine` takes compressed finite differences (approximate).
:mod:`sparsejac.pipeline` builds one per plan.
"""

from __future__ import annotations

import os
import sys
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from types import FrameType
from typing import Any, Protocol

import numpy as np

from sparsejac import fd as _fd
from sparsejac.ad import PreparedProgram, program_jvp, program_vjp
from sparsejac.ad.tape import MAX_BLOCK, Tape, elements_per_pass
from sparsejac.coloring import ColoringResult
from sparsejac.coloring.by_mode import colour_modes
from sparsejac.detection import program_sparsity
from sparsejac.errors import ConcretizationError
from sparsejac.pattern import SparsityPattern
from sparsejac.tracing import Program, trace
from sparsejac.tracing.program import check_ties
from sparsejac.validation import check_subset, check_within

__all__ = ["TAPE_WORK_PER_NODE", "Engine", "ReplayEngine", "choose_engine", "replays_dense"]


def _groups(c: ColoringResult) -> tuple[np.ndarray, int, np.ndarray, int]:
    """Column groups, forward products, row groups, reverse products (-1: not seeded)."""
    return c._seed_groups


def _decompress(c: ColoringResult, b: np.ndarray | None, cmat: np.ndarray | None,
                out: np.ndarray | None) -> np.ndarray:
    match c.partition:
        case "column":
            return c.decompress_data(B=b if b is not None else np.zeros(c.compressed_shape),
                                     out=out)
        case "row":
            return c.decompress_data(C=cmat if cmat is not None else
                                     np.zeros(c.compressed_shape), out=out)
        case _:
            return c.decompress_data(B=b, C=cmat, out=out)


def _eager_data(prog: Program, c: ColoringResult, out: np.ndarray | None = None,
                x: np.ndarray | None = None, params: Sequence[Any] | None = None
                ) -> np.ndarray:
    """J's nonzeros by the eager interpreters and colouring ``c``.

    At the trace point, or (a replay) at ``x`` with ``params``.
    """
    s, w = c.seed_matrices()
    b = cmat = None
    # every intermediate carries a block of directions: chunks sized by the largest
    largest = max((nd.out.size for nd in prog.nodes), default=0)
    if s is not None and s.shape[1]:
        p = s.shape[1]
        b = np.empty((prog.n_out, p))
        for lo, hi in _chunks(p, max(prog.n_in, largest)):
            seeds = np.ascontiguousarray(s[:, lo:hi].T).reshape((hi - lo, *prog.x.shape))
            _, t = program_jvp(prog, seeds, x=x, params=params)
            b[:, lo:hi] = t.reshape(hi - lo, -1).T
    if w is not None and w.shape[0]:
        q = w.shape[0]
        cmat = np.empty((q, prog.n_in))
        for lo, hi in _chunks(q, max(prog.n_out, largest)):
            _, ct = program_vjp(prog, w[lo:hi].reshape((hi - lo, *prog.out.shape)), x=x,
                                params=params)
            cmat[lo:hi] = ct.reshape(hi - lo, -1)
    return _decompress(c, b, cmat, out)


#: The eager interpreters carry blocks of at most this many entries (directions × size):
#: larger temporaries cost more in fresh memory pages than in arithmetic.
EAGER_BLOCK = 2_000_000


def _chunks(p: int, size: int) -> list[tuple[int, int]]:
    """Direction ranges whose blocks stay within :data:`EAGER_BLOCK` entries."""
    step = max(1, EAGER_BLOCK // max(size, 1))
    return [(lo, min(lo + step, p)) for lo in range(0, p, step)]


# ---------------------------------------------------------------------------------------
# engines
# ---------------------------------------------------------------------------------------


class Engine(Protocol):
    """What computes the Jacobian's values for a colouring (see the module docstring).

    ``kind`` is ``"prepared"``, ``"eager"``, ``"retrace"`` or ``"fd"``.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsejac.pipeline import prepare
    >>> prepare(lambda x: x ** 2, np.ones(3)).engine.kind
    'prepared'
    >>> prepare(lambda x: x ** 2, np.ones(3), one_shot=True).engine.kind
    'eager'
    """

    @property
    def kind(self) -> str:
        """The engine's kind."""

    def evaluate(self, mode: str, c: ColoringResult, x: np.ndarray, params: Sequence[Any],
                 out: np.ndarray | None) -> tuple[np.ndarray, Any]:
        """J's nonzeros at ``x`` (CSR order) and the replayed ``f(x)``.

        The value is None when the engine called ``f`` itself instead of replaying.
        """

    def stats(self) -> dict[str, Any] | None:
        """Sizes of the engine (or None)."""


@dataclass(frozen=True)
class PreparedEngine:
    """The recorded program, linearised once and replayed at every ``x``."""

    program: PreparedProgram | Tape
    kind: str = "prepared"
    #: for direct assembly: each output entry's position among the pattern's nonzeros
    #: (None: the compressed products and decompression; empty with ``in_order``)
    direct: np.ndarray | None = None
    nnz: int = 0
    #: direct assembly whose entries are the pattern's nonzeros in CSR order (no positions
    #: kept: 8 bytes per nonzero less)
    in_order: bool = False

    def evaluate(self, mode: str, c: ColoringResult, x: np.ndarray, params: Sequence[Any],
                 out: np.ndarray | None) -> tuple[np.ndarray, Any]:
        """Replay the prepared program: J's entries directly, or with the seeds of ``c``."""
        if self.direct is not None and isinstance(self.program, PreparedProgram):
            fx, values = self.program.direct(x, params)
            if self.in_order:  # the entries are the pattern, in its order
                if out is None:
                    return values, fx
                out[:] = values
                return out, fx
            data = np.zeros(self.nnz) if out is None else out
            if out is not None:
                data[:] = 0.0
            data[self.direct] = values
            return data, fx
        if isinstance(self.program, Tape) and mode != "fd":
            got = self.program.jacobian_data(x, c, params, out)
            if got is not None:
                return got
        cg, p, rg, q = _groups(c)
        b = cmat = None
        fx = None
        if mode == "mixed" and p and q:
            fx, b, cmat = self.program.mixed(x, cg, p, rg, q, params=params)
        elif mode in ("forward", "mixed") and p:
            fx, b = self.program.forward(x, cg, p, params=params)
        elif mode in ("reverse", "mixed") and q:
            fx, cmat = self.program.reverse(x, rg, q, params=params)
        else:  # no product at all (an empty pattern): replay the value alone
            fx = self.program.value(x, params=params)
        return _decompress(c, b, cmat, out), fx

    def stats(self) -> dict[str, Any] | None:
        """The prepared program's sizes, and the path (``direct`` or ``compressed``)."""
        return {**self.program.stats(),
                "path": "compressed" if self.direct is None else "direct"}


@dataclass(frozen=True)
class EagerEngine:
    """The eager interpreters on the trace, at its own point only (a one-off Jacobian)."""

    program: Program
    kind: str = "eager"

    def evaluate(self, mode: str, c: ColoringResult, x: np.ndarray, params: Sequence[Any],
                 out: np.ndarray | None) -> tuple[np.ndarray, Any]:
        """J at the trace point (any other point would need a replay or a new trace)."""
        if not np.array_equal(x, self.program.x.value):  # pragma: no cover - internal misuse
            raise RuntimeError("an eager plan evaluates at its trace point only")
        return _eager_data(self.program, c, out), None

    def stats(self) -> dict[str, Any] | None:
        """None: nothing is prepared."""
        return None


def mend_non_finite(engine: Any, mode: str, got: tuple[np.ndarray, Any], x: np.ndarray,
                    params: Sequence[Any], colorings: dict[str, ColoringResult],
                    pattern: SparsityPattern) -> tuple[np.ndarray, Any]:
    """Entries that are not finite in ``mode``, from the other one-sided mode where finite.

    At a singular point (``sqrt`` at 0, its partial infinite) ``0 · inf = 0`` holds along a
    path whose tangent (forward) or cotangent (reverse) is zero, and the two modes meet the
    zeros at different places: ``sqrt(sum(x) - x[0])`` at ``(1, 0, 0)`` has the derivative 0
    in ``x[0]`` (its two paths cancel before the infinite factor) in forward mode and NaN in
    reverse mode (``inf - inf`` after it), ``y * c - y * c`` with ``y = sqrt(x[0])`` the
    reverse. A finite value either mode gives is the derivative; the entries neither gives
    stay as they are. Found from outside: a prepared Jacobian (reverse mode on the tape) had
    NaN where the one-off one (forward) had 0. The check costs one pass over the entries; the
    other mode runs only where an entry is not finite, and only if it needs at most four
    times this mode's products (a dense row's forward mode is not run to mend it).
    """
    data = got[0]
    if mode == "fd" or np.isfinite(data).all() or not isinstance(
            engine, PreparedEngine | EagerEngine | ReplayEngine):
        return got
    if isinstance(engine, PreparedEngine) and engine.direct is not None:
        return got  # (entries assembled directly: the same in every mode)
    bad = ~np.isfinite(data)
    _, p, _, q = _groups(colorings[mode])
    for other in ("forward", "reverse"):
        if other == mode:
            continue
        c = colorings.get(other) or colour_modes(pattern, [other], "natural", 0.0, None,
                                                 1.0)[other]
        if c.n_colors > 4 * (p + q) + 8:
            continue
        alt = engine.evaluate(other, c, x, params, None)[0]
        take = bad & np.isfinite(alt)
        data[take] = alt[take]
        bad &= ~take
        if not bad.any():
            break
    return data, got[1]


#: A Jacobian at least this dense, with at least :data:`REPLAY_MIN_ENTRIES` entries, is
#: computed by replaying the eager interpreters (:class:`ReplayEngine`): recording its chain
#: rule would list every entry of every intermediate (a pseudo-spectral right-hand side,
#: 128 unknowns: 0.1 s to prepare and 2.5 ms a Jacobian, against 0.8 ms by the replay).
REPLAY_DENSITY = 0.5
REPLAY_MIN_ENTRIES = 4096


def replays_dense(pattern: SparsityPattern) -> bool:
    """Whether a pattern is dense enough for :class:`ReplayEngine` (a fixed rule on sizes).

    Examples
    --------
    >>> import numpy as np
    >>> from sparsejac.engines import replays_dense
    >>> from sparsejac.pattern import as_pattern
    >>> replays_dense(as_pattern(np.ones((64, 64), bool)))
    True
    >>> replays_dense(as_pattern(np.eye(64, dtype=bool)))
    False
    """
    m, n = pattern.shape
    return m * n >= REPLAY_MIN_ENTRIES and pattern.nnz >= REPLAY_DENSITY * m * n


@dataclass(frozen=True)
class ReplayEngine:
    """The eager interpreters replayed at every ``x``: for a dense Jacobian.

    Nothing is recorded: each call walks the program with the seeds of its colouring (as a
    one-off Jacobian does, at any point), whose directions are about as many as the
    Jacobian's columns or rows anyway.

    Examples
    --------
    >>> import numpy as np
    >>> import sparsejac
    >>> k = np.fft.rfftfreq(64)
    >>> def smooth(u):   # a spectral filter: every output depends on every input
    ...     return np.fft.irfft(np.exp(-k) * np.fft.rfft(u * u), n=64)
    >>> jac = sparsejac.SparseJacobian(smooth, np.ones(64))
    >>> jac.stats()["engine"]["engine"]
    'replay'
    >>> u = np.linspace(0.0, 1.0, 64)
    >>> e = np.eye(64)[5]
    >>> bool(np.allclose(jac(u).toarray()[:, 5], (smooth(u + 1e-6 * e) - smooth(u - 1e-6 * e))
    ...                  / 2e-6, atol=1e-6))
    True
    """

    program: Program
    kind: str = "prepared"

    def evaluate(self, mode: str, c: ColoringResult, x: np.ndarray, params: Sequence[Any],
                 out: np.ndarray | None) -> tuple[np.ndarray, Any]:
        """J's nonzeros at ``x`` by the eager interpreters."""
        return _eager_data(self.program, c, out, x=x, params=params), None

    def stats(self) -> dict[str, Any] | None:
        """The program's size and the path (compressed products, no recording)."""
        return {"engine": "replay", "nodes": len(self.program.nodes), "output_entries": None,
                "path": "compressed"}


@dataclass(frozen=True)
class RetraceEngine:
    """``f`` traced again (locally) at every ``x``: for value-dependent ``f``."""

    call: Callable[..., Any]
    pattern: SparsityPattern
    name: str
    kind: str = "retrace"

    def evaluate(self, mode: str, c: ColoringResult, x: np.ndarray, params: Sequence[Any],
                 out: np.ndarray | None) -> tuple[np.ndarray, Any]:
        """Trace at ``x``, check the local pattern against the plan's, eager products."""
        prog = trace(self.call, x, local=True, params=params, name=self.name)
        check_ties(prog)
        check_subset(program_sparsity(prog, local=True), self.pattern)
        return _eager_data(prog, c, out), None

    def stats(self) -> dict[str, Any] | None:
        """None: nothing is prepared."""
        return None


@dataclass(frozen=True)
class FdEngine:
    """Compressed finite differences (approximate)."""

    call: Callable[..., Any]
    method: str
    n_out: int
    kind: str = "fd"
    #: how the evaluations run (:func:`sparsejac.fd.worker_map`)
    workers: Any = None
    #: the dtype f returned at preparation, which sizes the steps (:func:`sparsejac.fd.step_eps`)
    out_dtype: Any = None
    #: flat ``(lb, ub)`` that no evaluation point leaves (:func:`sparsejac.fd.bounded_steps`)
    bounds: tuple[np.ndarray, np.ndarray] | None = None
    #: whether a complex step was checked against real steps (the first call does it)
    checked: list[bool] = field(default_factory=list)

    def evaluate(self, mode: str, c: ColoringResult, x: np.ndarray, params: Sequence[Any],
                 out: np.ndarray | None) -> tuple[np.ndarray, Any]:
        """``p + 1`` (``2p`` for 3-point) evaluations of ``f``, on ``workers`` if given.

        The first call of ``"cs"`` also checks that ``f`` carries the complex step
        (:func:`sparsejac.fd.check_complex_step_of`).
        """
        if self.bounds is not None:
            check_within(x, self.bounds, "x", " given at preparation")
        check = self.method == "cs" and not self.checked
        with _fd.worker_map(self.workers) as evaluate_all:
            data = _fd.fd_jacobian_data(_fd.BoundParams(self.call, tuple(params)), x, c,
                                        method=self.method, n_out=self.n_out, out=out,
                                        map=evaluate_all, out_dtype=self.out_dtype,
                                        bounds=self.bounds, check_complex_step=check)
        if check:
            self.checked.append(True)
        return data, None

    def stats(self) -> dict[str, Any] | None:
        """None: nothing is prepared."""
        return None


# ---------------------------------------------------------------------------------------
# the plan
# ---------------------------------------------------------------------------------------


def user_stacklevel() -> int:
    """The ``stacklevel`` of the innermost caller outside this package (the user's line)."""
    here = os.path.dirname(os.path.abspath(__file__))
    frame: FrameType | None = sys._getframe(1)
    level = 1
    while frame is not None and frame.f_code.co_filename.startswith(here):
        frame, level = frame.f_back, level + 1
    return level


def warn_constant_branch(program: Program, name: str, what: str, stacklevel: int) -> None:
    """Warn when a local trace's value does not depend on ``x``: its derivative is zero.

    Exact for ``f`` as written, and seldom meant: a cache that answers for ``x`` near its key
    (``np.allclose(x, key)``) makes ``f`` constant there.
    """
    if not program.out.active:
        warnings.warn(f"{name}'s value on the branch taken at x does not depend on x, so its "
                      f"{what} there is zero: is it a cache that answers for x (np.allclose("
                      "x, key))? Differentiate f without the cache.", RuntimeWarning,
                      stacklevel=stacklevel)


def trace_for_plan(call: Callable[..., Any], x0: np.ndarray, params: Sequence[Any],
                   name: str, sparsity: Any, one_shot: bool) -> tuple[Program | None, bool]:
    """The global trace, or (one-off) the local one, or None for a retrace plan.

    A local trace whose value does not depend on ``x`` (a cache that answered for ``x``)
    warns: its Jacobian, zero, is exact for ``f`` as written but seldom what was meant.
    """
    try:
        return trace(call, x0, params=params, name=name, check=True), False
    except ConcretizationError as exc:
        if one_shot:  # exact at this x: the branches taken here
            program = trace(call, x0, local=True, params=params, name=name, check=True)
            if program.out.dtype.kind in "fc":
                warn_constant_branch(program, name, "Jacobian", 6)  # (sparsejac.jacobian's
            return program, True                                   # caller)
        if sparsity is None:
            raise ConcretizationError(
                f"{exc} To prepare a Jacobian for such an f anyway, pass `sparsity=` (a "
                "pattern valid at every x you will evaluate, e.g. "
                "sparsejac.jacobian_sparsity(f, x, local=True) when the branches do not "
                "change it); f is then traced again at every call.") from exc
        return None, False


#: The tape is chosen when its work per call, about ``sum(sizes) x (width + 1)`` element
#: operations, stays below this many per node of the program: the chain engine's Python walk
#: costs a few microseconds per node, the tape's loop about a nanosecond per element and
#: direction (``benchmarks/solvers.py``, ``benchmarks/idioms.py``). Measured per call, the two
#: cross between 2,800 and 4,000 per node on Broyden's tridiagonal function (n = 700: tape
#: 48 µs, chain 52; n = 1,000: 64 against 55) and near 4,200 on the Akzo Nobel problem.
TAPE_WORK_PER_NODE = 3000


def choose_engine(program: Program, width: int, engine: str = "auto"
                  ) -> PreparedProgram | Tape:
    """The prepared form of ``program`` for ``width`` seed directions.

    ``"tape"`` (:class:`~sparsejac.ad.tape.Tape`) where the program can be encoded and, with
    ``"auto"``, where its elementwise work is small next to its number of nodes (many small
    operations: the tape's compiled loop beats a walk in Python); the chain engine
    (:class:`~sparsejac.ad.PreparedProgram`, local Jacobians preaccumulated) otherwise. A
    fixed rule on sizes: the same program always gets the same engine.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsejac.tracing import trace
    >>> from sparsejac.pipeline import choose_engine
    >>> def kinetics(y):
    ...     return np.array([-0.04 * y[0] + 1e4 * y[1] * y[2], 0.04 * y[0] - 3e7 * y[1] ** 2])
    >>> type(choose_engine(trace(kinetics, np.ones(3)), 3)).__name__
    'Tape'
    >>> type(choose_engine(trace(lambda x: x[1:] * x[:-1], np.ones(10**5)), 2)).__name__
    'PreparedProgram'
    """
    reason = ""
    if engine == "tape" or (engine != "chain" and _tape_by_rule(program, width)[0]):
        tape, reason = Tape.build_or_reason(program)
        if tape is not None and tape.fits(width):
            return tape
        if tape is not None:
            reason = f"its tangent blocks of {width} directions exceed {MAX_BLOCK:,} entries"
    prepared = PreparedProgram(program, width=width)
    if engine == "tape":
        prepared.not_taped = reason
        warnings.warn(f"engine='tape' was requested, but the tape does not encode this "
                      f"program: {reason}. The chain engine runs instead (exact as well; "
                      "stats()['engine']['not_taped'] repeats why).", UserWarning,
                      stacklevel=user_stacklevel())
    return prepared


def _tape_by_rule(program: Program, width: int) -> tuple[bool, int]:
    """Whether ``engine="auto"``'s rule takes the tape, and the tape's work per call.

    The work is about ``sum(node sizes) x (width + 1)`` element operations; the rule takes the
    tape below :data:`TAPE_WORK_PER_NODE` per node.
    """
    work = elements_per_pass(program) * (width + 1)
    return work <= TAPE_WORK_PER_NODE * max(len(program.nodes), 1), work
