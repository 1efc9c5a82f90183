"""Python reads of values computed from the parameters only: the branches a program holds on.

A right-hand side ``f(t, y)`` often switches in time in Python: ``if t < t_dose:``, a loop
over intervals ``if a <= t <= b: return ...``, ``k = int(t // dt)``. The value read depends on
the parameters alone, not on ``x``, so the branch taken is the same for every ``x``: a
global trace may follow it, and the program it records holds wherever the same reads give
the same values. A :class:`ParamGuards` keeps those reads (the values and the nodes that
compute them from the parameters) so that a replay with new parameter values can check them
first (:meth:`ParamGuards.holds`), and a prepared Jacobian prepares again for the other
branch (:class:`sparsejac.SparseJacobian`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from sparsejac.tracing.program import CONST, PARAM, Node, Var

__all__ = ["ParamGuards"]

#: How to write a parameter's read in numpy (a guard that changes at every value)
PARAM_HINT = (
    "Write it with numpy, so that one preparation serves every value: np.exp(-t) instead of "
    "math.exp(-t), np.minimum(t, 1.0) instead of min(t, 1.0), np.where(t > 1.0, a, b) "
    "instead of `if t > 1.0:`, np.interp(t, tp, fp) or scipy.interpolate.CubicSpline for a "
    "table of values in time."
)

#: Reads that give the value itself (a new one for every parameter value), not a decision
VALUE_READS = ("float()", "complex()", ".item()", ".tolist()", ".tobytes()", "format()",
               "np.asarray()", "hash()")

#: What a read keeps of the value: the branch ``if t < 1:`` takes is its truth, ``int(t)``'s
#: its integer part (other reads: the value itself)
_READERS: dict[str, Any] = {"bool()": bool, "int()": int}


class ParamGuards:
    """The reads of parameter-only values during a trace, and how to check them again.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsejac.tracing import trace
    >>> def f(y, t):
    ...     return y * 2.0 if t < 1.0 else y * 3.0
    >>> guards = trace(f, np.ones(2), params=(0.5,)).guards
    >>> guards.describe().split(" (at")[0]
    'bool() of a value computed from the parameters'
    >>> guards.holds((0.7,)), guards.holds((1.5,))
    (True, False)
    """

    def __init__(self, reads: Sequence[tuple[Var, np.ndarray, str, str]],
                 nodes: Sequence[Node], params: tuple[Var, ...]) -> None:
        #: (the value read, its value at the trace, what read it, the user's line)
        self.reads = list(reads)
        need = {id(var) for var, *_ in self.reads}
        kept = []
        for node in reversed(nodes):  # the nodes computing the values read, from params
            if id(node.out) in need:
                kept.append(node)
                need.update(id(v) for v in node.inputs if v.kind != CONST)
        self._nodes = kept[::-1]
        self._params = params

    @property
    def value_reads(self) -> bool:
        """Whether some read takes a parameter's value itself (``float(t)``, ``math.exp(t)``).

        An integer or boolean value read whole (an index array computed from ``t``, which
        ``table[idx]`` converts) is a decision, as ``int(t)`` is: not a value read.
        """
        return any(what.startswith(VALUE_READS) and value.dtype.kind not in "biu"
                   for _, value, what, _ in self.reads)

    def holds(self, params: Sequence[Any]) -> bool:
        """Whether every read gives, at ``params``, the value it gave at the trace."""
        env: dict[int, Any] = {id(v): np.asarray(p) for v, p in zip(self._params, params,
                                                                    strict=True)}
        for node in self._nodes:
            args = [v.value if v.kind == CONST else env[id(v)] for v in node.inputs]
            env[id(node.out)] = node.prim.impl(*args, **node.params)
        for var, value, what, _ in self.reads:
            got = np.asarray(env[id(var)])
            if got.shape != value.shape:
                return False
            reader = _READERS.get(what)
            if what.startswith("round(, "):  # round(t, n): the same n digits
                digits = int(what[8:-1])
                reader = lambda v, n=digits: round(float(v), n)  # noqa: E731
            if reader is not None and got.size == 1:
                try:
                    if reader(got) != reader(value):
                        return False
                except (ValueError, OverflowError):  # int() of NaN or infinity: not this branch
                    return False
            elif not np.array_equal(got, value, equal_nan=value.dtype.kind in "fc"):
                return False
        return True

    def describe(self) -> str:
        """The first read that decides: what read which value, and the user's line."""
        var, _, what, where = self.reads[0]
        of = "a parameter" if var.kind == PARAM else "a value computed from the parameters"
        return f"{what} of {of}{where}"

    def __len__(self) -> int:
        return len(self.reads)
