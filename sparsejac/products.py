"""Bring your own products: sparse Jacobians from matrix-seeded products computed elsewhere.

Code differentiated by another tool (JAX, PyTorch, a hand-written adjoint) can compute
``J(x) @ S`` and ``W @ J(x)`` for a block of seeds at once but not the sparse Jacobian
itself. :func:`from_products` gives such products sparsejac's colouring (forward, reverse or
mixed, chosen by the same cost rule), its decompression and its matrices: the products are
called with the compressed seed blocks, so a Jacobian costs a few products, not ``n``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp

from sparsejac.coloring import (
    DEFAULT_REVERSE_COST,
    ColoringResult,
    color_partitions,
    partition_cost,
    partition_for_mode,
)
from sparsejac.coloring.budget import prepared_effort
from sparsejac.pattern import as_pattern
from sparsejac.pipeline import Plan, PlanView
from sparsejac.validation import check_reverse_cost, check_x

__all__ = ["ProductJacobian", "from_products"]

Products = Callable[..., Any]


@dataclass
class ProductsEngine:
    """Evaluates compressed products with the user's functions (an :class:`~.pipeline.Engine`)."""

    jvp: Products | None
    vjp: Products | None
    shape: tuple[int, int]
    kind: str = "products"
    _seeds: dict[int, tuple[np.ndarray | None, np.ndarray | None]] = field(
        default_factory=dict, repr=False)

    def _seed(self, c: ColoringResult) -> tuple[np.ndarray | None, np.ndarray | None]:
        hit = self._seeds.get(id(c))
        if hit is None:
            s, w = c.seed_matrices()
            for a in (s, w):
                if a is not None:
                    a.setflags(write=False)  # handed to user code: never changed by it
            hit = self._seeds[id(c)] = (s, w)
        return hit

    def evaluate(self, mode: str, c: ColoringResult, x: np.ndarray, params: Sequence[Any],
                 out: np.ndarray | None) -> tuple[np.ndarray, Any]:
        """Call the products with the seeds of ``c`` and decompress."""
        m, n = self.shape
        s, w = self._seed(c)
        b = cmat = None
        if s is not None and s.shape[1] and c.n_forward:
            assert self.jvp is not None
            b = _block(self.jvp(x.copy(), s, *params), (m, s.shape[1]), "jvp", "J @ S")
        if w is not None and w.shape[0] and c.n_reverse:
            assert self.vjp is not None
            cmat = _block(self.vjp(x.copy(), w, *params), (w.shape[0], n), "vjp", "W @ J")
        if c.partition == "column":
            b = b if b is not None else np.zeros((m, 0))
            return c.decompress_data(B=b, out=out), None
        if c.partition == "row":
            cmat = cmat if cmat is not None else np.zeros((0, n))
            return c.decompress_data(C=cmat, out=out), None
        return c.decompress_data(B=b, C=cmat, out=out), None

    def stats(self) -> dict[str, Any] | None:
        """None: nothing is prepared."""
        return None


def _block(value: Any, shape: tuple[int, int], name: str, what: str) -> np.ndarray:
    raw = value.toarray() if sp.issparse(value) else value
    kind = getattr(raw, "dtype", None)
    if kind is None:  # a list or a scalar: numpy's reading of it
        try:
            kind = np.asarray(raw).dtype
        except (TypeError, ValueError):
            kind = np.dtype(object)
    try:
        if kind.kind not in "biuf":  # complex, strings, objects (None): not cast silently
            raise TypeError
        arr = np.asarray(raw, dtype=np.float64)
    except (TypeError, ValueError):
        got = (f"an array of dtype {kind}" if isinstance(raw, np.ndarray)
               else f"{type(value).__name__} {value!r:.60}")
        raise ValueError(f"`{name}` must return {what}: an array of real numbers of shape "
                         f"{shape}; got {got}") from None
    if arr.shape != shape:
        raise ValueError(f"`{name}` must return {what} of shape {shape}; got an array of shape "
                         f"{arr.shape}")
    return np.asarray(arr, dtype=np.float64)


class ProductJacobian(PlanView):
    """A sparse Jacobian whose compressed products come from user functions.

    Built by :func:`from_products`; called like a prepared
    :class:`~sparsejac.SparseJacobian`: ``jac(x, *args)`` returns a ``csr_array``.

    Attributes
    ----------
    sparsity : scipy.sparse.csr_array of bool
        The pattern.
    mode : str
        ``"forward"`` (``jvp`` products), ``"reverse"`` (``vjp``) or ``"mixed"`` (both).
    reason : str
        Why that mode.
    coloring : ColoringResult
        The colouring of the mode.
    n_products : int
        Products per Jacobian: columns of ``S`` plus rows of ``W``.

    Examples
    --------
    >>> import numpy as np
    >>> import scipy.sparse as sp
    >>> import sparsejac
    >>> jac = sparsejac.from_products(vjp=lambda x, W: W * (2 * x),   # J = diag(2x)
    ...                               sparsity=sp.eye_array(3))
    >>> jac.mode, jac.n_products
    ('reverse', 1)
    >>> jac(np.array([1.0, 2.0, 3.0])).diagonal()
    array([2., 4., 6.])
    """

    def __init__(self, plan: Plan) -> None:
        self._fixed = plan

    @property
    def _plan(self) -> Plan:
        return self._fixed

    def __call__(self, x: Any, *args: Any) -> sp.csr_array:
        """The Jacobian at ``x`` (``args`` are passed on to the products)."""
        return self.evaluate(x, params=args)

    def evaluate(self, x: Any, *, params: Sequence[Any] = (), format: str = "csr"
                 ) -> sp.csr_array | sp.csc_array:
        """The Jacobian at ``x`` as a ``csr_array`` (``format="csc"``: a ``csc_array``)."""
        if format not in ("csr", "csc"):
            raise ValueError(f"`format` must be 'csr' or 'csc'; got {format!r}")
        n = self._plan.pattern.shape[1]
        xa = check_x(x)
        if xa.size != n:
            raise ValueError(f"`x` must have {n} elements (the pattern's columns); got "
                             f"{xa.size}")
        return self._plan.matrix(self._plan.evaluate(xa.ravel(), tuple(params)), format)

    def __repr__(self) -> str:
        m, n = self._plan.shape
        return (f"ProductJacobian(shape=({m}, {n}), nnz={self._plan.pattern.nnz:,}, "
                f"mode={self.mode!r}: {self.n_products} products instead of "
                f"{m if self.mode == 'reverse' else n})")


def from_products(*, sparsity: Any, jvp: Products | None = None, vjp: Products | None = None,
                  mode: str = "auto", order: Any = "best", effort: float | None = None,
                  reverse_cost: float = DEFAULT_REVERSE_COST) -> ProductJacobian:
    """A prepared sparse Jacobian from matrix-seeded products you compute yourself.

    Parameters
    ----------
    sparsity : scipy sparse matrix, array_like or SparsityPattern
        The Jacobian's pattern, ``m × n`` (every nonzero of J must be in it: the products
        are decompressed on it, so a missing entry would be added to another one).
    jvp : callable, optional
        ``jvp(x, S, *args) -> J(x) @ S``, shape ``(m, p)``, for a 0/1 seed ``S`` of shape
        ``(n, p)`` (read-only): forward products, all ``p`` at once (``jax.vmap`` over
        ``jax.jvp``, ``torch.func.vmap`` over ``torch.func.jvp``).
    vjp : callable, optional
        ``vjp(x, W, *args) -> W @ J(x)``, shape ``(q, n)``, for a 0/1 seed ``W`` of shape
        ``(q, m)``: reverse products. At least one of ``jvp`` and ``vjp`` is needed; with both,
        mixed mode (a bidirectional colouring) is available for dense rows *and* columns.
    mode : {"auto", "forward", "reverse", "mixed"}
        ``"auto"`` takes the lowest cost among the modes the given functions allow
        (forward products + ``reverse_cost`` × reverse products; ties to forward).
    order, effort, reverse_cost
        As for :class:`~sparsejac.SparseJacobian`.

    Returns
    -------
    ProductJacobian

    Examples
    --------
    Products of ``f(x) = x[1:] * x[:-1]`` written by hand (the columns of ``S`` are
    directions; ``J @ S`` is one directional derivative per column):

    >>> import numpy as np
    >>> import scipy.sparse as sp
    >>> import sparsejac
    >>> def jvp(x, S):
    ...     return x[:-1, None] * S[1:] + x[1:, None] * S[:-1]
    >>> pattern = sp.diags_array([np.ones(5), np.ones(5)], offsets=[0, 1], shape=(5, 6))
    >>> jac = sparsejac.from_products(jvp=jvp, sparsity=pattern)
    >>> jac
    ProductJacobian(shape=(5, 6), nnz=10, mode='forward': 2 products instead of 6)
    >>> jac(np.arange(6.0)).toarray()[:2]
    array([[1., 0., 0., 0., 0., 0.],
           [0., 2., 1., 0., 0., 0.]])
    """
    if jvp is None and vjp is None:
        raise ValueError("from_products needs `jvp` (forward products), `vjp` (reverse "
                         "products) or both; got neither")
    for name, fn in (("jvp", jvp), ("vjp", vjp)):
        if fn is not None and not callable(fn):
            raise TypeError(f"`{name}` must be callable; got {type(fn).__name__}")
    allowed = [m for m, ok in (("forward", jvp is not None), ("reverse", vjp is not None),
                               ("mixed", jvp is not None and vjp is not None)) if ok]
    if mode == "auto":
        modes = allowed
    elif mode in ("forward", "reverse", "mixed"):
        if mode not in allowed:
            need = {"forward": "`jvp`", "reverse": "`vjp`", "mixed": "both `jvp` and `vjp`"}
            raise ValueError(f"mode={mode!r} needs {need[mode]}")
        modes = [mode]
    else:
        raise ValueError(f"Unknown `mode` {mode!r}; expected one of ['auto', 'forward', "
                         "'reverse', 'mixed']")
    cost_weight = check_reverse_cost(reverse_cost)
    pattern = as_pattern(sparsity, name="sparsity")
    t0 = time.perf_counter()
    effort = prepared_effort(pattern.nnz) if effort is None else float(effort)
    parts = {m: partition_for_mode(m) for m in modes}
    found = color_partitions(pattern, sorted(set(parts.values())), order=order, effort=effort,
                             reverse_cost=cost_weight)
    colorings = {m: found[p] for m, p in parts.items()}
    costs = {m: partition_cost(c, cost_weight) for m, c in colorings.items()}
    chosen = min(modes, key=lambda m: (costs[m], modes.index(m)))
    detail = ", ".join(f"{m} {costs[m]:g}" for m in modes)
    reason = (f"mode={mode!r} was requested" if mode != "auto" else
              f"lowest cost = forward products + {cost_weight:g} x reverse products ({detail})")
    engine = ProductsEngine(jvp, vjp, pattern.shape)
    plan = Plan(pattern, colorings, chosen, reason, costs, engine, effort,
                {"coloring": time.perf_counter() - t0})
    return ProductJacobian(plan)
