"""The one program walker: primal values, liveness and rule-output checks.

Detection, the eager forward and reverse interpreters and the prepared engine all walk a
recorded :class:`~sparsejac.tracing.program.Program` node by node. What they share lives
here, once:

* :class:`Values` -- the primal value of every variable: the one recorded at the trace point,
  or a *replay* at a new ``x`` (and new parameter values) by each operation's ``impl``;
  replaying a program that read values while it was traced (local mode) is refused;
* :func:`dead_after` -- liveness: for each node, the variables nobody reads after it, so
  that walkers free dependency sets, tangents and entries as soon as they can;
* :func:`check_block` -- the check every interpreter applies to a rule's output (the seed
  axis kept, the operand's shape), naming the rule that broke it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from sparsejac.tracing.program import Node, Program, Var

__all__ = ["Values", "check_block", "check_replayable", "dead_after", "pull_back"]


def check_replayable(prog: Program) -> None:
    """Refuse to replay a program that read values while it was traced.

    Raises
    ------
    ValueError
        ``prog.value_dependent`` is True.
    """
    if prog.value_dependent:
        raise ValueError(
            "this program read traced values while it was recorded (local mode), so it is valid "
            "at its trace point only and cannot be replayed at another x; trace it again"
        )


class Values:
    """Primal values of a program's variables, recorded or replayed.

    Parameters
    ----------
    prog : Program
        The recorded program.
    x : array_like, optional
        Replay at this point (the traced ``x``'s shape). Default: the recorded values.
    params : sequence, optional
        New values of the program's parameters for the replay (an ODE's ``t``).

    Notes
    -----
    :meth:`run` walks the nodes in order and yields ``(node, args, out)`` with the values of
    the node's inputs and output, storing each output; without a replay nothing is
    recomputed.

    Examples
    --------
    >>> import numpy as np
    >>> import sparsejac
    >>> from sparsejac.tracing import trace
    >>> from sparsejac.tracing.walk import Values
    >>> prog = trace(lambda x: x[1:] * x[:-1], np.array([1.0, 2.0, 3.0]))
    >>> vals = Values(prog, x=np.array([1.0, 1.0, 2.0]))
    >>> for _ in vals.run():
    ...     pass
    >>> vals[prog.out]
    array([1., 2.])
    """

    __slots__ = ("prog", "replay", "vals")

    def __init__(self, prog: Program, x: Any = None, params: Sequence[Any] | None = None
                 ) -> None:
        self.prog = prog
        self.replay = x is not None or params is not None
        if self.replay:
            check_replayable(prog)
        self.vals: dict[int, Any] = {
            prog.x.id: prog.x.value if x is None else np.asarray(x, dtype=np.float64)}
        new = params if params is not None else [p.value for p in prog.params]
        if len(new) != len(prog.params):
            raise ValueError(
                f"the program has {len(prog.params)} parameters but {len(new)} values were given")
        for var, val in zip(prog.params, new, strict=True):
            self.vals[var.id] = np.asarray(val) if self.replay else var.value

    def __getitem__(self, var: Var) -> Any:
        return self.vals.get(var.id, var.value)

    def args(self, node: Node) -> list[Any]:
        """The values of ``node``'s inputs."""
        return [self.vals.get(v.id, v.value) for v in node.inputs]

    def run(self, nodes: Sequence[Node] | None = None) -> Iterator[tuple[Node, list[Any], Any]]:
        """Walk ``nodes`` (default: all) in order, yielding ``(node, args, out)``."""
        replay = self.replay
        vals = self.vals
        for node in self.prog.nodes if nodes is None else nodes:
            args = [vals.get(v.id, v.value) for v in node.inputs]
            out = node.prim.impl(*args, **node.params) if replay else node.out.value
            vals[node.out.id] = out
            yield node, args, out

    def complete(self) -> Values:
        """Walk every node (compute every value) and return self.

        A replay's floating-point warnings are silenced: f warned (or not, under its own
        ``np.errstate``) when the user ran it, and these would point at sparsejac's files.
        """
        with np.errstate(all="ignore"):
            for _ in self.run():
                pass
        return self


def pull_back(prog: Program, ct_out: Any,
              pull: Callable[[Node, Any], Sequence[Any | None]]) -> dict[int, Any]:
    """The reverse walk: the output's cotangent pulled back to every active variable.

    ``pull(node, ct)`` returns the cotangent contribution of each of ``node``'s inputs (None:
    none); contributions to one variable are summed. The reverse interpreter and the recorded
    reverse sweep of second order (:mod:`sparsejac.ad.second_order`) share this walk.

    Returns
    -------
    dict
        ``{var.id: cotangent}`` of the variables reached (``prog.x.id`` among them unless
        the output does not depend on ``x``).
    """
    cts: dict[int, Any] = {}
    if prog.out.active:
        cts[prog.out.id] = ct_out
    for node in reversed(prog.nodes):
        if not node.out.active:
            continue
        ct = cts.pop(node.out.id, None)
        if ct is None:
            continue
        for var, g in zip(node.inputs, pull(node, ct), strict=True):
            if g is None or not var.active:
                continue
            prev = cts.get(var.id)
            cts[var.id] = g if prev is None else prev + g
    return cts


def dead_after(prog: Program, keep: Sequence[Var] = ()) -> list[list[int]]:
    """For node ``i``, the ids of the variables whose last reader is node ``i``.

    The program's input and output, constants and the variables in ``keep`` are never listed.

    Examples
    --------
    >>> import numpy as np
    >>> import sparsejac
    >>> from sparsejac.tracing import trace
    >>> from sparsejac.tracing.walk import dead_after
    >>> prog = trace(lambda x: np.sin(x) * 2.0, np.ones(3))
    >>> [len(ids) for ids in dead_after(prog)]   # sin(x) is dead after the product
    [0, 1]
    """
    last: dict[int, int] = {}
    for i, node in enumerate(prog.nodes):
        for v in node.inputs:
            if not v.is_const:  # constants are never stored by a walker
                last[v.id] = i
    skip = {prog.x.id, prog.out.id, *(v.id for v in keep)}
    dead: list[list[int]] = [[] for _ in prog.nodes]
    for vid, i in last.items():
        if vid not in skip:
            dead[i].append(vid)
    return dead


def check_block(kind: str, node: Node, block: Any, expected: tuple[int, ...]) -> None:
    """Raise if a rule's output block does not have the ``expected`` shape.

    Parameters
    ----------
    kind : str
        The rule (``"jvp"``, ``"vjp"``, ``"pattern"``).
    node : Node
        The node whose rule produced ``block``.
    block : array or sparse matrix
        The rule's output.
    expected : tuple of int
        Its required shape.

    Raises
    ------
    AssertionError
        Naming the rule and both shapes: a broken rule is a bug, never a silent wrong value.
    """
    if tuple(block.shape) != tuple(expected):
        raise AssertionError(
            f"{kind} rule of {node.prim.name!r} returned shape {tuple(block.shape)}, expected "
            f"{tuple(expected)}"
        )
