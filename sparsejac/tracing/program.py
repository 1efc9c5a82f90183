"""The recorded program: variables, nodes, and the trace that records them.

Running ``f`` on a :class:`~sparsejac.tracing.tracer.Tracer` records every numpy call as a
:class:`Node` (a primitive applied to :class:`Var` inputs with static parameters) into a
:class:`Trace`; the finished trace is a :class:`Program`, a straight-line program in SSA
form. Detection, forward mode and reverse mode are interpreters over that program, so the
numpy-facing part (dispatch, argument parsing) is written once.

Vocabulary
----------
* **input** – the array ``x`` we differentiate with respect to (one per program).
* **param** – a further argument of ``f`` that is traced but not differentiated
  (the time ``t`` of an ODE right-hand side). Replays may give it new values.
* **const** – a value that does not depend on any input (folded at trace time, never
  recorded as a node).
* **active** – a variable with a path of non-zero-derivative operations from ``x``; only
  active variables carry dependency sets, tangents and cotangents.

Every variable keeps the value it had at the trace point, so a program recorded at ``x0``
also *is* the evaluation of ``f(x0)`` (reverse mode reuses those values).
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from sparsejac.errors import ConcretizationError

if TYPE_CHECKING:
    from sparsejac.tracing.guards import ParamGuards

#: numpy's own asarray, bound at import: a trace wraps np.asarray (user code's
#: conversions of buffers), and this package's hot paths need none of that
_asarray = np.asarray


__all__ = ["Node", "Operation", "Program", "Trace", "Var", "check_ties", "current_trace"]

_ids = itertools.count()

INPUT, PARAM, CONST, NODE = "input", "param", "const", "node"
#: Bits of :attr:`Var.sources`.
FROM_X, FROM_PARAMS = 1, 2


class Var:
    """One SSA value of a recorded program.

    Attributes
    ----------
    shape : tuple of int
    dtype : numpy.dtype
    kind : {"input", "param", "const", "node"}
    active : bool
        Whether derivatives with respect to the input can flow through this value.
    value : ndarray
        The value at the trace point (for constants, the constant itself).

    Examples
    --------
    >>> import numpy as np
    >>> import sparsejac
    >>> from sparsejac.tracing import trace
    >>> prog = trace(lambda x: x * 2.0, np.ones(3))
    >>> prog.x.kind, prog.x.active, prog.out.kind, prog.out.shape
    ('input', True, 'node', (3,))
    """

    __slots__ = ("active", "dtype", "generic", "id", "kind", "modulus_of", "nan_data",
                 "piecewise", "shape", "singular", "size", "sources", "tied", "value")

    def __init__(self, value: Any, kind: str, active: bool, sources: int = 0) -> None:
        arr = _asarray(value)
        # Python scalars stay Python scalars so that numpy's promotion rules (NEP 50: a
        # Python float does not widen a float32 array) are the same in replays as in f.
        weak = isinstance(value, (bool, int, float, complex)) and not isinstance(value, np.generic)
        self.value = value if weak else arr
        self.shape: tuple[int, ...] = arr.shape
        #: number of elements
        self.size: int = arr.size
        self.dtype: np.dtype[Any] = arr.dtype
        self.kind = kind
        self.active = active
        #: what the value depends on, as bits: FROM_X (the input), FROM_PARAMS (a parameter)
        self.sources = sources
        #: a boolean that some equality ``x-dependent == constant`` holding at the trace point
        #: decided (local traces: a branch on it holds at no nearby point)
        self.tied = False
        #: a scalar ``x-dependent == constant`` (or ``!=``) that does not hold at the trace
        #: point: a global trace may branch on it (the equality holds at no nearby point, and
        #: a replay where it holds is refused, :class:`TieChecked`)
        self.generic = False
        #: for ``np.abs(u)`` of a real ``u``: ``u`` (its square is ``u ** 2``, see
        #: :func:`sparsejac.primitives.elementwise`'s handlers)
        self.modulus_of: Var | None = None
        #: computed through a selection that can be flat (np.maximum, np.clip, np.where ...):
        #: an equality of it and a constant may hold on a whole neighbourhood
        self.piecewise = False
        #: computed through an operation with a singular point in a value depending on x (a
        #: division by it, its logarithm or power): a NaN or infinity in it may be ``0/0`` or
        #: ``log(0)`` at an isolated x, so a guard replacing it is checked (:class:`GuardChecked`)
        self.singular = False
        #: computed from a constant holding NaN or infinity (missing observations stored as
        #: NaN): a NaN in it may be the data's, the same for every x, so a NaN test of it is
        #: not a guard of a singular point
        self.nan_data = (kind == CONST and arr.dtype.kind in "fc" and arr.size > 0
                         and not bool(np.isfinite(arr).all()))
        self.id = next(_ids)

    @property
    def is_const(self) -> bool:
        """True when the value does not depend on any input or param."""
        return self.kind == CONST

    def __repr__(self) -> str:
        tag = "*" if self.active else ""
        return f"%{self.id}{tag}:{self.kind}{list(self.shape)}"


class Operation(Protocol):
    """What a recorded program needs of an operation (a primitive of the registry).

    The primitives layer implements it (``sparsejac.primitives.core.Primitive``); the tracing
    layer only names it, so that it does not depend on the registry.
    """

    name: str
    zero_derivative: bool

    def impl(self, *vals: Any, **params: Any) -> Any:
        """The value of the operation on plain arrays."""

    def pattern(self, node: Node, deps: Any, local: bool) -> Any:
        """Dependency sets of the output from those of the inputs."""

    def jvp(self, node: Node, vals: Any, tangents: Any, out: Any) -> Any:
        """Tangent block of the output."""

    def vjp(self, node: Node, vals: Any, out: Any, ct: Any) -> Any:
        """Cotangent blocks of the inputs."""

    def linearize(self, node: Node) -> Any:
        """Local Jacobians per input, or None."""


@dataclass(eq=False)
class Node:
    """A primitive applied to input variables with static parameters.

    Examples
    --------
    >>> import numpy as np
    >>> import sparsejac
    >>> from sparsejac.tracing import trace
    >>> node = trace(lambda x: np.exp(x), np.ones(2)).nodes[0]
    >>> node.prim.name, node.inputs[0].kind
    ('exp', 'input')
    """

    prim: Operation
    inputs: tuple[Var, ...]
    params: dict[str, Any]
    out: Var
    #: what rules derive once per node and reuse in every replay (e.g. the CSR structure of
    #: its local Jacobians); never part of the program's meaning
    cache: dict[str, Any] = field(default_factory=dict, repr=False)

    def __repr__(self) -> str:
        args = ", ".join(map(repr, self.inputs))
        return f"{self.out!r} = {self.prim.name}({args})"


@dataclass(eq=False)
class Program:
    """A finished trace: ``out = f(x, *params)`` as a list of nodes.

    Attributes
    ----------
    x : Var
        The differentiated input (its value is the trace point).
    params : tuple of Var
        Non-differentiated traced inputs.
    nodes : list of Node
        In execution order.
    out : Var
        The output (possibly a constant when ``f`` does not depend on ``x``).
    value_dependent : bool
        True when the trace consulted values (local mode): the program is then valid at the
        trace point only, and must be recorded again for another ``x``.

    Examples
    --------
    >>> import numpy as np
    >>> import sparsejac
    >>> from sparsejac.tracing import trace
    >>> prog = trace(lambda x: x[1:] - x[:-1], np.ones(4))
    >>> prog.n_in, prog.n_out, len(prog.active_nodes())
    (4, 3, 3)
    """

    x: Var
    params: tuple[Var, ...]
    nodes: list[Node]
    out: Var
    value_dependent: bool = False
    local: bool = False
    notes: list[str] = field(default_factory=list)
    #: equalities that held at this x only (:func:`check_tie`'s messages): refused by the
    #: derivative engines (:func:`check_ties`), not by detection or finite differences
    ties: list[str] = field(default_factory=list)
    #: the branches taken on values computed from the parameters only, which a replay with
    #: new parameter values checks first (``None``: no such branch)
    guards: ParamGuards | None = None

    @property
    def n_in(self) -> int:
        """Size of ``x``."""
        return self.x.size

    @property
    def n_out(self) -> int:
        """Size of the output."""
        return self.out.size

    def release_values(self) -> None:
        """Drop the trace-point values of the nodes' outputs (keep inputs, params, constants).

        Parameters that hold caches for rules (a ``release_caches()`` method) drop them too.

        A prepared engine replays the program at every point and never reads them again;
        they are the size of every intermediate array. Afterwards the program can only be
        replayed (``Values`` with an ``x``), not read at its trace point.
        """
        for node in self.nodes:
            if node.out.kind == NODE and node.out is not self.out:
                node.out.value = None
            for v in node.params.values():  # caches the rules built while linearising
                release = getattr(v, "release_caches", None)
                if release is not None:
                    release()

    def snapshot_constants(self) -> None:
        """Copy the writeable arrays the trace read as constants (its inputs and parameters).

        A constant of the trace is the caller's own array (a global, an argument); replays
        read it where it lives, so after an in-place change they follow the new values. With
        copies, a replay computes ``f`` as recorded, and a check against a real call sees the
        change.
        """
        seen: set[int] = set()
        for node in self.nodes:
            for v in (*node.inputs, node.out):
                if (v.kind == CONST and id(v) not in seen and isinstance(v.value, np.ndarray)
                        and v.value.flags.writeable):
                    seen.add(id(v))
                    v.value = v.value.copy()
            for k, p in node.params.items():
                if isinstance(p, np.ndarray) and p.flags.writeable:
                    node.params[k] = p.copy()
        if self.out.kind == CONST and isinstance(self.out.value, np.ndarray):
            self.out.value = self.out.value.copy()

    def active_nodes(self) -> list[Node]:
        """The nodes whose output is active, in execution order."""
        return [nd for nd in self.nodes if nd.out.active]

    def __repr__(self) -> str:
        lines = [f"Program(x={self.x!r}, params={self.params!r}) {{"]
        lines += [f"  {nd!r}" for nd in self.nodes]
        lines.append(f"  return {self.out!r}\n}}")
        return "\n".join(lines)


class Trace:
    """The recording in progress. Tracers point at their trace; nodes are appended here.

    Parameters
    ----------
    local : bool
        Local mode lets Python control flow read values (the program is then marked
        ``value_dependent``); global mode refuses with a ConcretizationError.
    """

    def __init__(self, *, local: bool) -> None:
        self.local = local
        self.nodes: list[Node] = []
        self.value_dependent = False
        self.closed = False
        self.ties: list[str] = []
        #: Python's reads of values computed from the parameters only (a branch on an ODE's
        #: time): (value, its value here, what read it, where), see :class:`ParamGuards`
        self.param_reads: list[tuple[Var, np.ndarray, str, str]] = []

    def new_input(self, value: np.ndarray, kind: str) -> Var:
        """A fresh input (active) or param (inactive) variable."""
        return Var(value, kind, active=(kind == INPUT),
                   sources=FROM_X if kind == INPUT else FROM_PARAMS)

    def const(self, value: Any) -> Var:
        """A constant variable (nothing recorded)."""
        return Var(value, CONST, active=False)

    def ensure_open(self) -> None:
        """Raise if the trace has ended: a traced array kept by ``f`` (a global, a cache)."""
        if self.closed:
            raise RuntimeError(
                "a traced array was used after its trace ended (was it stored in a global, "
                "a cache or a closure, or returned inside another object?)")

    def emit(
        self, prim: Operation, inputs: tuple[Var, ...], params: dict[str, Any], value: np.ndarray
    ) -> Var:
        """Record ``prim(*inputs, **params)`` whose value at the trace point is ``value``.

        When no input depends on the inputs of the program the result is folded into a
        constant and nothing is recorded.
        """
        if self.closed:
            self.ensure_open()
        value = _asarray(value)
        # one pass over the inputs (this runs once per recorded operation)
        const = True
        any_active = piecewise = singular = nan_data = False
        sources = 0
        for v in inputs:
            if v.kind != CONST:
                const = False
            if v.active:
                any_active = True
            if v.piecewise:
                piecewise = True
            if v.singular:
                singular = True
            if v.nan_data:
                nan_data = True
            sources |= v.sources
        if const:
            return Var(value, CONST, active=False)
        name = prim.name
        active = any_active and not prim.zero_derivative and value.dtype.kind in "fc"
        out = Var(value, NODE, active=active, sources=sources)  # (ints and bools: no derivative)
        if active and name in ("absolute", "fabs") and value.dtype.kind == "f" and len(
                inputs) == 1 and inputs[0].dtype.kind == "f":
            out.modulus_of = inputs[0]
        out.piecewise = piecewise or name in _PIECEWISE
        out.singular = singular or (name in _SINGULAR and inputs[_SINGULAR[name]].active)
        out.nan_data = nan_data
        if (name in _GUARDS and inputs[0].singular and inputs[0].active
                and not inputs[0].nan_data):
            from sparsejac.tracing.callers import called_by_a_rule

            if not called_by_a_rule():
                guard = GuardChecked(prim)
                prim = guard  # refused at replays where it finds a NaN or infinity
                if guard.finds(value):
                    self.ties.append(guard.message())
        tie = generic = False
        if name in _EQUALITIES and _compares_to_constant(name, inputs, value):
            checked = prim if isinstance(prim, TieChecked) else TieChecked(prim)
            prim = checked  # noted here (derivative engines refuse it), refused at replays
            tie = holds_everywhere(checked.name, value)
            if tie:
                self.ties.append(tie_message(checked.name, checked.where))
            elif name in ("equal", "not_equal") and value.size == 1 and sources & FROM_X:
                generic = True
        if self.local and value.dtype == bool and sources & FROM_X:
            # a branch on it, or on a boolean computed from it, holds at no nearby point
            out.tied = tie or any(v.tied for v in inputs)
        out.generic = generic
        self.nodes.append(Node(prim, inputs, params, out))
        return out

    def read_param(self, var: Var, what: str) -> None:
        """Note that Python read ``var``, computed from the parameters only, by ``what``."""
        from sparsejac.tracing.callers import user_line

        self.param_reads.append((var, np.array(var.value, copy=True), what, user_line()))

    def mark_value_dependent(self, what: str) -> None:
        """Note that the trace consulted a value (allowed in local mode only)."""
        self.value_dependent = True


#: the operations :func:`_compares_to_constant` looks at
_EQUALITIES = frozenset({"equal", "not_equal", "logical_not", "astype", "sign"})


def _compares_to_constant(name: str, inputs: tuple[Var, ...], value: Any = None) -> bool:
    """Whether a node is the user's ``a == c`` or ``a != c`` (``a`` differentiable, ``c`` constant).

    ``c`` may be a traced parameter (an ODE's time ``t``): it does not move with x either.
    Also ``np.logical_not(a)`` (``a == 0``) and ``a.astype(bool)`` (``a != 0``). A rule's own
    comparison (xlogy's ``x == 0``) is not: the rule handles its special case.
    """
    if name not in _EQUALITIES or any(v.piecewise for v in inputs):
        return False  # (relu == 0 holds where it is flat)
    if name == "sign":  # np.sign(k) == 0: k == 0
        if not (len(inputs) == 1 and inputs[0].active):
            return False
    elif name in ("logical_not", "astype") and len(inputs) == 1:
        if not (inputs[0].active and np.asarray(value).dtype == bool):
            return False
    elif not (name in ("equal", "not_equal") and len(inputs) == 2
              and any(v.active for v in inputs)
              and any(v.kind == CONST or not v.sources & FROM_X for v in inputs)):
        return False
    from sparsejac.tracing.callers import called_by_a_rule

    return not called_by_a_rule()


def check_tie(name: str, value: Any, where: str = "") -> None:
    """Refuse an equality of a differentiable value and a constant that holds everywhere.

    ``k == 0`` true (``k != 0`` false) at every element holds at this x and at no point
    near it: whatever f computes from it (``np.where(k == 0, limit, formula)``, a branch, a
    cache keyed on x) is a special case at exactly this point, and the derivative of the
    branch taken is not f's (the limit's derivative is 0, the formula's is not). Elementwise
    equalities that hold at some elements only (``u == 0`` on a boundary) pass.

    Raises
    ------
    ConcretizationError
        Naming the user's line and the ways out.
    """
    if holds_everywhere(name, value):
        raise ConcretizationError(tie_message(name, where))


def holds_everywhere(name: str, value: Any) -> bool:
    """Whether the equality behind comparison ``name`` holds at every element of ``value``.

    ``==`` and ``np.logical_not`` (``a == 0``) true everywhere; ``!=`` and ``astype(bool)``
    (``a != 0``) false everywhere; never for an empty result.
    """
    v = np.asarray(value)
    if not v.size:
        return False
    return bool(np.all(v)) if name in ("equal", "logical_not") else not bool(np.any(v))


def tie_message(name: str, where: str = "") -> str:
    """The error of a tie (:func:`check_tie`) for comparison ``name`` at the user's line."""
    if name == "sign":
        return (
            f"`np.sign` of a value depending on x is taken at exactly 0{where} (at every "
            "element, and at no point near it): its value there, 0, is a special case whose "
            "derivative is not f's. An odd law written sign(v) * g(abs(v)) (a flow q = "
            "sign(dh) * sqrt(abs(dh)), a friction or drain-source swap) gets a zero derivative "
            "at v = 0 where its slope is g'(0). Write it without the sign, e.g. np.where(v >= "
            "0, g(v), -g(-v)) with g written for v >= 0 (no np.abs), or differentiate at a "
            "nearby point (not a flat start).")
    op = {"equal": "==", "not_equal": "!=", "logical_not": "np.logical_not",
          "astype": "astype(bool)` or `np.where(k, ...)"}.get(name, name)
    return (
        f"the equality behind `{op}` between a value depending on x and a constant holds at "
        f"this x only{where} "
        "(at every element, and at no point near it): what f computes from it (np.where(k == "
        "0, limit, formula), a branch, a cache keyed on x) is a special case at exactly this "
        "point, whose derivative is not f's. Write the special case under an inequality, "
        "e.g. np.where(np.abs(k) < 1e-8, taylor_expansion, formula) (np.sinc for sin(x)/x), "
        "or differentiate at a nearby point.")


#: operations with a singular point in the operand at this index (0/0, log(0), 0 ** -1)
_SINGULAR = {"true_divide": 1, "divide": 1, "reciprocal": 0, "log": 0, "log2": 0, "log10": 0,
             "power": 0, "float_power": 0}
#: tests for NaN or infinity (np.nan_to_num is written with them)
_GUARDS = frozenset({"isnan", "isinf", "isfinite"})

#: selections whose result can be flat over a neighbourhood (a constant branch chosen)
_PIECEWISE = frozenset({"maximum", "minimum", "fmax", "fmin", "where", "clip", "select",
                        "piecewise", "heaviside", "copysign"})


def check_ties(prog: Program) -> None:
    """Refuse to differentiate a program whose trace met a tie (:func:`check_tie`).

    Raises
    ------
    ConcretizationError
        The first tie's message. Detection and finite differences do not call this: a
        pattern or a difference quotient needs no derivative of the branch taken.
    """
    if prog.ties:
        raise ConcretizationError(prog.ties[0])


class TieChecked:
    """An equality node's primitive that refuses ties at every replay (:func:`check_tie`)."""

    def __init__(self, prim: Any) -> None:
        from sparsejac.tracing.callers import user_line

        self._prim = prim
        self.where = user_line()  # f's line, recorded while f runs

    def check(self, value: Any) -> None:
        """Refuse ``value`` (this comparison's result) if it is a tie."""
        check_tie(self._prim.name, value, self.where)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._prim, name)

    def impl(self, *args: Any, **params: Any) -> Any:
        """The comparison, refused where it is a tie."""
        out = self._prim.impl(*args, **params)
        if current_trace() is None:  # a replay (a trace notes the tie instead: Trace.emit)
            self.check(out)
        return out


class GuardChecked(TieChecked):
    """``np.isnan`` / ``np.isinf`` / ``np.isfinite`` of a value with a singular point.

    ``np.nan_to_num(r / np.linalg.norm(r))`` at ``r = 0``, ``np.where(np.isnan(v), 0, v)``,
    ``np.nan_to_num(p * np.log(p))`` at ``p = 0``: the NaN (``0/0``) or infinity replaced is a
    special case at exactly this point, and the replacement's derivative (0) is not f's. Where
    the test finds one, a derivative is refused (as a tie: :func:`check_tie`).
    """

    def finds(self, out: Any) -> bool:
        """Whether the test's result ``out`` found a NaN or an infinity."""
        v = np.asarray(out)
        return bool(v.size) and (not bool(np.all(v)) if self._prim.name == "isfinite"
                                 else bool(np.any(v)))

    def message(self) -> str:
        """The refusal, naming the user's line."""
        return (
            f"`np.{self._prim.name}` finds a NaN or an infinity at this x{self.where} in a value "
            "computed through a division, logarithm or power of a value depending on x (0/0 as "
            "in r / np.linalg.norm(r) at r = 0, p * np.log(p) at p = 0): replacing it (np."
            "nan_to_num, np.where(np.isnan(v), ...)) is a special case at exactly this point, "
            "whose derivative is not f's. Write the special case under an inequality, e.g. "
            "np.where(theta < 1e-8, small_angle_formula, formula) (np.sinc for sin(x)/x, "
            "scipy.special.xlogy(p, p) for p * log(p)), or differentiate at a nearby point.")

    def check(self, value: Any) -> None:
        """Refuse where the test finds a NaN or infinity."""
        if self.finds(value):
            raise ConcretizationError(self.message())


class _Stack(threading.local):
    """The traces being recorded, per thread (two threads may trace at once)."""

    def __init__(self) -> None:
        self.traces: list[Trace] = []


_STACK = _Stack()


def current_trace() -> Trace | None:
    """The innermost trace being recorded in this thread, or ``None``."""
    traces = _STACK.traces
    return traces[-1] if traces else None


@contextmanager
def recording(trace: Trace) -> Iterator[Trace]:
    """Make ``trace`` this thread's current trace for the duration of the block."""
    _STACK.traces.append(trace)
    try:
        yield trace
    finally:
        _STACK.traces.pop()
        trace.closed = True
