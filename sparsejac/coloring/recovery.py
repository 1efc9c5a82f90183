"""Recovering a symmetric matrix from ``B = H @ S``: direct (star) and by substitution (acyclic).

This module owns :class:`SymmetricRecovery`, which a symmetric
:class:`~sparsejac.coloring.result.ColoringResult` builds once from its colours; every later
decompression reuses it.

With colours ``c`` on the vertices (rows and columns) of a structurally symmetric ``H`` and
``S[j, c[j]] = 1``, ``B[i, k]`` is the sum of ``H[i, j]`` over the ``j`` of colour ``k`` in
row ``i``. A distance-1 colouring gives the diagonal at once: ``H[i, i] = B[i, c[i]]``.

* **star** colouring (every path on four vertices uses three colours): each off-diagonal
  ``H[i, j]`` is alone in ``B[i, c[j]]`` or, by symmetry, its twin ``H[j, i]`` is alone in
  ``B[j, c[i]]``. The choice is made once; decompression is one gather, as for a column
  colouring.
* **acyclic** colouring (every cycle uses three colours): the edges between two colours
  form trees. A leaf ``i`` of such a tree, with its one edge to ``j``, has ``H[i, j] = B[i,
  c[j]]``; subtracting that value from ``B[j, c[i]]`` removes the edge, and the tree is
  peeled leaf by leaf (Gebremedhin, Tarafdar, Manne and Pothen 2007, section 5). The order
  of the edges is computed once (:func:`~sparsejac.coloring._symmetric.substitution_order`,
  ``O(nnz)``); decompression is one compiled pass over it. Every edge has a *level*: the
  edges of one level depend only on lower levels, so they could be recovered together; the
  compiled pass runs them in sequence, which costs the same ``O(nnz)`` without a Python loop
  over levels (a path has n/2 of them).
"""

from __future__ import annotations

from functools import cached_property
from typing import Any

import numpy as np

from sparsejac.coloring import _symmetric
from sparsejac.pattern import SparsityPattern

__all__ = ["SYMMETRIC_METHODS", "SymmetricRecovery", "check_method", "check_symmetric"]

#: The symmetric colouring methods: ``"star"`` (direct recovery) and ``"acyclic"``
#: (recovery by substitution, usually fewer colours).
SYMMETRIC_METHODS: tuple[str, ...] = ("star", "acyclic")


def check_method(method: object) -> str:
    """Return ``method`` if it names a symmetric colouring method, else raise.

    Examples
    --------
    >>> from sparsejac.coloring.recovery import check_method
    >>> check_method("acyclic")
    'acyclic'
    >>> check_method("cyclic")
    Traceback (most recent call last):
        ...
    ValueError: Unknown `method` 'cyclic'; expected one of ['star', 'acyclic'].
    """
    if isinstance(method, str) and method in SYMMETRIC_METHODS:
        return method
    raise ValueError(f"Unknown `method` {method!r}; expected one of {list(SYMMETRIC_METHODS)}.")


def check_symmetric(pattern: SparsityPattern, *, name: str = "sparsity") -> None:
    """Raise unless ``pattern`` is square and structurally symmetric.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsejac.pattern import as_pattern
    >>> from sparsejac.coloring.recovery import check_symmetric
    >>> check_symmetric(as_pattern(np.eye(3) + np.eye(3, k=1) + np.eye(3, k=-1)))
    >>> check_symmetric(as_pattern(np.eye(3) + np.eye(3, k=1)))
    Traceback (most recent call last):
        ...
    ValueError: a symmetric colouring needs a structurally symmetric `sparsity`; got a (3, 3) \
pattern with 2 nonzeros whose transposed entry is absent, e.g. (0, 1)
    """
    m, n = pattern.shape
    if m != n:
        raise ValueError(
            f"a symmetric colouring needs a square `{name}`; got shape {pattern.shape}")
    if np.array_equal(pattern.indptr, pattern.col_indptr) and np.array_equal(
            pattern.indices, pattern.col_indices):
        return
    t = pattern.T
    keys = pattern.rows * n + pattern.indices
    missing = ~np.isin(keys, t.rows * n + t.indices)
    k = int(np.flatnonzero(missing)[0])
    raise ValueError(
        f"a symmetric colouring needs a structurally symmetric `{name}`; got a {pattern.shape} "
        f"pattern with {int(missing.sum())} nonzeros whose transposed entry is absent, e.g. "
        f"({int(pattern.rows[k])}, {int(pattern.indices[k])})"
    )


class SymmetricRecovery:
    """Precomputed recovery of a symmetric matrix's nonzeros from ``B = H @ S``.

    Parameters
    ----------
    pattern : SparsityPattern
        The structurally symmetric n×n pattern (diagonal entries optional).
    colors : ndarray of int64
        The colour of every vertex, ``0..n_colors-1``.
    n_colors : int
        Number of colours (columns of ``B``).
    method : {"star", "acyclic"}
        The property ``colors`` has, and so the recovery: direct or by substitution.

    Attributes
    ----------
    method : str
    n_colors : int
    depth : int
        Levels of substitution (0 for a star colouring or a diagonal pattern): the longest
        chain of values each recovered from the previous one.

    Raises
    ------
    ValueError
        The colours do not have the property ``method`` needs (some nonzero could not be
        recovered).

    Examples
    --------
    >>> import numpy as np
    >>> from sparsejac.pattern import as_pattern
    >>> from sparsejac.coloring.recovery import SymmetricRecovery
    >>> H = np.diag([1.0, 2.0, 3.0]) + np.diag([4.0, 5.0], 1) + np.diag([4.0, 5.0], -1)
    >>> colors = np.array([0, 1, 0])
    >>> rec = SymmetricRecovery(as_pattern(H), colors, 2, "acyclic")
    >>> S = np.eye(2)[colors]
    >>> rec.decompress_data(H @ S)
    array([1., 4., 4., 2., 5., 5., 3.])
    >>> rec.depth
    1
    """

    def __init__(
        self, pattern: SparsityPattern, colors: np.ndarray, n_colors: int, method: str
    ) -> None:
        check_symmetric(pattern, name="pattern")
        self.pattern = pattern
        self.method = check_method(method)
        self.n_colors = int(n_colors)
        self.colors = np.ascontiguousarray(colors, dtype=np.int64)
        n = pattern.shape[0]
        # symmetric: the CSC arrays equal the CSR arrays, and CSC position a is the
        # transposed entry of CSR position a
        self.trans = pattern.csc_to_csr
        if self.colors.shape != (n,) or (n and (self.colors.min() < 0
                                                 or self.colors.max() >= max(self.n_colors, 1))):
            raise ValueError(f"`colors` must be {n} colours in 0..{self.n_colors - 1}")
        rows, cols, lost, clash = _symmetric.star_sources(
            pattern.indptr, pattern.indices, self.trans, self.colors, max(self.n_colors, 1))
        if clash >= 0:
            i, j = int(pattern.rows[clash]), int(pattern.indices[clash])
            raise ValueError(
                f"these colours do not recover H[{i}, {j}]: vertices {i} and {j} are adjacent "
                f"and share colour {int(self.colors[i])}")
        self.depth = 0
        if self.method == "star":
            if lost >= 0:
                i, j = int(pattern.rows[lost]), int(pattern.indices[lost])
                raise ValueError(
                    f"these colours are not a star colouring: H[{i}, {j}] is alone in B "
                    f"neither in row {i} nor in row {j}")
            gather_c = rows * self.n_colors + cols
            gather_c.setflags(write=False)
            self._gather_c = gather_c
            self._rows, self._cols = rows, cols
        else:
            source, level, done = _symmetric.substitution_order(
                pattern.indptr, pattern.indices, self.trans, self.colors,
                max(self.n_colors, 1))
            if not done:
                raise ValueError(
                    "these colours are not an acyclic colouring: some two-coloured subgraph "
                    "has a cycle, so substitution cannot recover its nonzeros")
            self.source = source
            self.level = level
            self.depth = int(level.max()) + 1 if level.size else 0

    @cached_property
    def _gather_f(self) -> np.ndarray:
        """Flat indices into a Fortran-ordered ``B`` (star), computed on first use."""
        idx: np.ndarray = self._cols * self.pattern.shape[0] + self._rows
        idx.setflags(write=False)
        return idx

    def decompress_data(self, B: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        """The nonzero values of ``H`` in CSR order, from ``B = H @ S`` of shape (n, p).

        ``B`` must already have the right shape (checked by the caller); it is not modified.
        """
        if out is None:
            out = np.empty(self.pattern.nnz)
        if self.method == "star":
            if B.flags.c_contiguous:
                return np.take(B.reshape(-1), self._gather_c, out=out)
            if B.flags.f_contiguous:
                return np.take(B.reshape(-1, order="F"), self._gather_f, out=out)
            return np.take(np.ascontiguousarray(B).reshape(-1), self._gather_c, out=out)
        flat = np.array(B, dtype=np.float64, order="C").reshape(-1)  # a copy, consumed
        pat = self.pattern
        result: np.ndarray = _symmetric.substitute(
            flat, max(self.n_colors, 1), pat.indptr, pat.indices, self.trans, self.colors,
            self.source, out)
        return result

    def __repr__(self) -> str:
        return (f"SymmetricRecovery(method={self.method!r}, n_colors={self.n_colors}, "
                f"depth={self.depth})")


def describe(recovery: Any) -> str:
    """One line on how a symmetric colouring is decompressed (for reports)."""
    if recovery.method == "star":
        return "direct recovery (star colouring)"
    return f"substitution in {recovery.depth} levels (acyclic colouring)"
