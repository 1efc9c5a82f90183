"""Slow, obviously correct checkers of colourings, for tests and ``color(..., check=True)``.

Nothing here is fast or clever on purpose: each checker loops over the pattern in plain
Python (with dicts), straight from the definition, so that it can serve as an oracle for the
compiled kernels. Use them on small and medium matrices. (After SMC's ``check.jl`` and
asdex's ``verify.py``.)

Definition (Gebremedhin, Manne and Pothen 2005, Definition 3.1): a partition of the columns
is *structurally orthogonal* when no row has nonzeros in two columns of the same group; then
every nonzero ``J[i, j]`` is the single contribution of column ``j`` to ``(J @ S)[i, group
of j]``. For rows, swap the roles.

A bidirectional colouring (forward colours on some columns, reverse colours on some rows,
-1 = neutral elsewhere) is valid when every nonzero ``J[i, j]`` is the single contribution
to ``B[i, colour of j]`` (column j coloured, no other coloured column of row i with its
colour) or to ``C[colour of i, j]`` (the same with rows); section 5 of the same paper.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import numpy as np
import scipy.sparse as sp

from sparsejac.coloring.graph import check_partition
from sparsejac.coloring.result import ColoringResult
from sparsejac.pattern import SparsityPattern, as_pattern

__all__ = [
    "check_acyclic_coloring",
    "check_bicoloring",
    "check_groups",
    "check_result",
    "check_star_coloring",
    "check_structurally_orthogonal",
]


def check_groups(groups: Any, length: int, *, name: str = "groups", neutral: bool = False) -> int:
    """Check that ``groups`` is an integer array of ``length`` using colours ``0..p-1``.

    Every colour below the largest must be used (no empty group).

    Parameters
    ----------
    groups : array_like of int
        The group of every column (or row).
    length : int
        Expected number of entries.
    name : str, optional
        Argument name for error messages.
    neutral : bool, optional
        Also allow -1 (the neutral colour of a bidirectional colouring).

    Returns
    -------
    int
        The number of groups ``p``.

    Raises
    ------
    ValueError
        Wrong shape or dtype, a negative group, or an unused group number.

    Examples
    --------
    >>> from sparsejac.coloring.check import check_groups
    >>> check_groups([0, 1, 0], 3)
    2
    >>> check_groups([0, 2, 0], 3)
    Traceback (most recent call last):
        ...
    ValueError: `groups` must use every group 0..2; group 1 is empty
    """
    g = np.asarray(groups)
    if g.shape != (length,) or (g.size and g.dtype.kind not in "iu"):
        raise ValueError(
            f"`{name}` must be an integer array of shape ({length},); "
            f"got {g.dtype} array of shape {g.shape}"
        )
    if g.size == 0:
        return 0
    low = -1 if neutral else 0
    if int(g.min()) < low:
        raise ValueError(f"`{name}` must be >= {low}; got {int(g.min())}")
    p = int(g.max()) + 1
    used = set(g.tolist())
    for c in range(p):
        if c not in used:
            raise ValueError(f"`{name}` must use every group 0..{p - 1}; group {c} is empty")
    return p


def check_structurally_orthogonal(sparsity: Any, groups: Any, partition: str = "column") -> None:
    """Raise if two columns (rows) of one group share a row (column).

    Parameters
    ----------
    sparsity : SparsityPattern, scipy sparse or array_like
        The pattern.
    groups : array_like of int
        The group of every column (``"column"``) or row (``"row"``).
    partition : {"column", "row"}
        Which side ``groups`` describes.

    Raises
    ------
    AssertionError
        A conflict; the message names the row (column), the two columns (rows) and their
        common group.
    ValueError
        ``groups`` is malformed (see :func:`check_groups`) or ``partition`` is unknown.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsejac.coloring.check import check_structurally_orthogonal
    >>> A = np.array([[1, 1, 0], [0, 1, 1]])
    >>> check_structurally_orthogonal(A, [0, 1, 0])
    >>> check_structurally_orthogonal(A, [0, 0, 1])
    Traceback (most recent call last):
        ...
    AssertionError: row 0 has nonzeros in columns 0 and 1, both in group 0
    """
    check_partition(partition)
    pat: SparsityPattern = as_pattern(sparsity)
    if partition == "column":
        ptr, idx, side, other, n = pat.indptr, pat.indices, "row", "columns", pat.shape[1]
    else:
        ptr, idx, side, other, n = pat.col_indptr, pat.col_indices, "column", "rows", pat.shape[0]
    check_groups(groups, n)
    g = [int(x) for x in np.asarray(groups)]
    for line in range(ptr.size - 1):
        owner: dict[int, int] = {}
        for k in range(int(ptr[line]), int(ptr[line + 1])):
            v = int(idx[k])
            c = g[v]
            if c in owner:
                raise AssertionError(
                    f"{side} {line} has nonzeros in {other} {owner[c]} and {v}, both in group {c}"
                )
            owner[c] = v


def check_bicoloring(sparsity: Any, column_groups: Any, row_groups: Any) -> None:
    """Raise unless every nonzero is read alone from ``B = J @ S`` or from ``C = W @ J``.

    Parameters
    ----------
    sparsity : SparsityPattern, scipy sparse or array_like
        The m×n pattern.
    column_groups : array_like of int, shape (n,)
        Forward colour of every column, -1 for a column in no seed.
    row_groups : array_like of int, shape (m,)
        Reverse colour of every row, -1 for a row in no seed.

    Raises
    ------
    AssertionError
        A nonzero neither B nor C holds alone; the message names it and, for each side,
        why (the side is neutral there, or the other column or row of the same colour).
    ValueError
        A groups array is malformed (see :func:`check_groups`, with -1 allowed).

    Examples
    --------
    >>> import numpy as np
    >>> from sparsejac.coloring.check import check_bicoloring
    >>> A = np.array([[1, 1, 1], [1, 0, 0], [1, 0, 0]])  # an arrowhead without diagonal
    >>> check_bicoloring(A, [0, -1, -1], [-1, -1, -1])
    Traceback (most recent call last):
        ...
    AssertionError: nonzero (0, 1) is in neither B nor C alone: column 1 is neutral; row 0 \
is neutral
    >>> check_bicoloring(A, [0, -1, -1], [0, -1, -1])
    """
    pat: SparsityPattern = as_pattern(sparsity)
    m, n = pat.shape
    check_groups(column_groups, n, name="column_groups", neutral=True)
    check_groups(row_groups, m, name="row_groups", neutral=True)
    cg = [int(x) for x in np.asarray(column_groups)]
    rg = [int(x) for x in np.asarray(row_groups)]
    # (row, forward colour) -> the coloured columns of that row with that colour, and
    # (column, reverse colour) -> the coloured rows of that column with that colour.
    in_row: dict[tuple[int, int], list[int]] = {}
    in_col: dict[tuple[int, int], list[int]] = {}
    entries = [(int(i), int(j)) for i, j in zip(pat.rows, pat.indices, strict=True)]
    for i, j in entries:
        if cg[j] >= 0:
            in_row.setdefault((i, cg[j]), []).append(j)
        if rg[i] >= 0:
            in_col.setdefault((j, rg[i]), []).append(i)
    for i, j in entries:
        if cg[j] >= 0:
            others = [o for o in in_row[(i, cg[j])] if o != j]
            if not others:
                continue  # B[i, colour of j] is J[i, j] alone
            why_b = (
                f"column {j} shares row {i} with column {others[0]}, both in forward colour {cg[j]}"
            )
        else:
            why_b = f"column {j} is neutral"
        if rg[i] >= 0:
            others = [o for o in in_col[(j, rg[i])] if o != i]
            if not others:
                continue  # C[colour of i, j] is J[i, j] alone
            why_c = (
                f"row {i} shares column {j} with row {others[0]}, both in reverse colour {rg[i]}"
            )
        else:
            why_c = f"row {i} is neutral"
        raise AssertionError(f"nonzero ({i}, {j}) is in neither B nor C alone: {why_b}; {why_c}")


def _neighbours(sparsity: Any, colors: Any) -> tuple[list[set[int]], list[int]]:
    """Neighbour sets (diagonal dropped) of a symmetric pattern, and its colours as ints."""
    pat = as_pattern(sparsity)
    n = pat.shape[0]
    if pat.shape != (n, n):
        raise AssertionError(f"a symmetric colouring needs a square pattern; got {pat.shape}")
    check_groups(colors, n, name="colors")
    color = [int(c) for c in np.asarray(colors)]
    nbrs: list[set[int]] = [set() for _ in range(n)]
    for i, j in zip(pat.rows.tolist(), pat.indices.tolist(), strict=True):
        if i != j:
            nbrs[i].add(j)
    for i in range(n):
        for j in nbrs[i]:
            if i not in nbrs[j]:
                raise AssertionError(f"the pattern is not symmetric: ({i}, {j}) without ({j}, {i})")
            if color[i] == color[j]:
                raise AssertionError(f"adjacent vertices {i} and {j} share colour {color[i]}")
    return nbrs, color


def check_star_coloring(sparsity: Any, colors: Any) -> None:
    """Check that ``colors`` is a star colouring of a symmetric pattern's adjacency graph.

    Straight from the definition (Gebremedhin, Tarafdar, Manne and Pothen 2007): adjacent
    vertices (``i != j`` with ``H[i, j]`` a nonzero) have different colours, and every path
    on four vertices ``x - v - w - y`` uses at least three colours. Walks every such path.

    Raises
    ------
    AssertionError
        Naming the two vertices of one colour, or the two-coloured path.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsejac.coloring.check import check_star_coloring
    >>> path = np.eye(4) + np.eye(4, k=1) + np.eye(4, k=-1)
    >>> check_star_coloring(path, [0, 1, 0, 2])
    >>> check_star_coloring(path, [0, 1, 0, 1])
    Traceback (most recent call last):
        ...
    AssertionError: the path 0-1-2-3 uses two colours only: [0, 1, 0, 1]
    """
    nbrs, color = _neighbours(sparsity, colors)
    for v in range(len(nbrs)):
        for w in nbrs[v]:
            for x in nbrs[v] - {w}:
                for y in nbrs[w] - {v, x}:
                    used = [color[x], color[v], color[w], color[y]]
                    if len(set(used)) < 3:
                        raise AssertionError(
                            f"the path {x}-{v}-{w}-{y} uses two colours only: {used}")


def check_acyclic_coloring(sparsity: Any, colors: Any) -> None:
    """Check that ``colors`` is an acyclic colouring of a symmetric pattern's adjacency graph.

    From the definition: adjacent vertices have different colours, and every cycle uses
    at least three colours -- for every pair of colours, the edges between them form a
    forest, which a plain union-find over each pair's edges verifies (an edge whose ends
    are already connected closes a two-coloured cycle).

    Raises
    ------
    AssertionError
        Naming two vertices of one colour, or an edge that closes a two-coloured cycle.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsejac.coloring.check import check_acyclic_coloring
    >>> cycle = np.eye(4) + np.eye(4, k=1) + np.eye(4, k=-1)
    >>> cycle[0, 3] = cycle[3, 0] = 1
    >>> check_acyclic_coloring(cycle, [0, 1, 0, 2])
    >>> check_acyclic_coloring(cycle, [0, 1, 0, 1])
    Traceback (most recent call last):
        ...
    AssertionError: edge (2, 3) closes a cycle coloured with 0 and 1 only
    """
    nbrs, color = _neighbours(sparsity, colors)
    pairs: dict[tuple[int, int], list[tuple[int, int]]] = defaultdict(list)
    for i in range(len(nbrs)):
        for j in sorted(nbrs[i]):
            if i < j:
                pairs[(min(color[i], color[j]), max(color[i], color[j]))].append((i, j))
    for (a, b), edges in pairs.items():
        parent: dict[int, int] = {}
        for i, j in edges:
            ri, rj = _root(parent, i), _root(parent, j)
            if ri == rj:
                raise AssertionError(
                    f"edge ({i}, {j}) closes a cycle coloured with {a} and {b} only")
            parent[ri] = rj


def _root(parent: dict[int, int], u: int) -> int:
    """The root of ``u`` in a plain union-find forest (a dict; absent means a root)."""
    while parent.setdefault(u, u) != u:
        u = parent[u]
    return u


def _symmetric_values(pat: SparsityPattern) -> np.ndarray:
    """Distinct symmetric integer values: ``H[i, j] = H[j, i]``, exact in float64 sums."""
    n = pat.shape[0]
    lo = np.minimum(pat.rows, pat.indices).astype(np.float64)
    hi = np.maximum(pat.rows, pat.indices).astype(np.float64)
    values: np.ndarray = 1.0 + lo * n + hi
    return values


def _check_symmetric_result(result: Any) -> None:
    """Colours, count, the star or acyclic property and the seed matrix of a result."""
    pat = result.pattern
    n = pat.shape[0]
    groups = result.groups
    p = check_groups(groups, n)
    if p != result.n_colors:
        raise AssertionError(f"n_colors is {result.n_colors} but the groups use {p}")
    if result.method == "star":
        check_star_coloring(pat, groups)
    elif result.method == "acyclic":
        check_acyclic_coloring(pat, groups)
    else:
        raise AssertionError(f"unknown symmetric method {result.method!r}")
    if not (result.lower_bound <= p):
        raise AssertionError(f"lower_bound {result.lower_bound} exceeds n_colors {p}")
    S, W = result.seed_matrices()
    if W is not None or S is None or S.shape != (n, p):
        raise AssertionError("a symmetric colouring needs S of shape (n, p) and no W")
    for j in range(n):
        if S[j].sum() != 1.0 or S[j, groups[j]] != 1.0:
            raise AssertionError(f"S row {j} is not the unit vector of group {groups[j]}")


def check_result(result: Any, *, J: Any = None) -> None:
    """Check a :class:`~sparsejac.coloring.ColoringResult` from its definition.

    Checks the groups (:func:`check_groups`), ``n_colors``, structural orthogonality (for
    a symmetric colouring: the star or acyclic property), the seed matrices, and that
    decompressing the compressed ``J`` gives ``J`` back exactly.

    Parameters
    ----------
    result : ColoringResult
        The colouring.
    J : array_like or scipy sparse, optional
        Values to round-trip (symmetric for a symmetric colouring); by default the pattern
        with the values ``1, 2, ..., nnz`` (distinct symmetric integers for a symmetric
        colouring).

    Raises
    ------
    AssertionError
        The colouring or its decompression is wrong.

    Examples
    --------
    >>> import numpy as np, sparsejac
    >>> from sparsejac.coloring.check import check_result
    >>> check_result(sparsejac.color(np.eye(3) + np.eye(3, k=1)))
    """
    if not isinstance(result, ColoringResult):
        raise TypeError("`result` must be a ColoringResult (from sparsejac.color); got "
                        f"{type(result).__name__}")
    pat = result.pattern
    m, n = pat.shape
    if result.partition == "bidirectional":
        _check_bidirectional_result(result)
    elif result.partition == "symmetric":
        _check_symmetric_result(result)
    else:
        _check_one_sided_result(result)
    S, W = result.seed_matrices()
    if J is None and result.partition == "symmetric":
        values = _symmetric_values(pat)
    elif J is None:
        values = np.arange(1, pat.nnz + 1, dtype=np.float64)
    else:
        if np.shape(J) != pat.shape:
            raise ValueError(f"`J` has shape {np.shape(J)}; the colouring's pattern is "
                             f"{pat.shape}")
        values = np.asarray(
            sp.csr_array(J if sp.issparse(J) else np.asarray(J, dtype=float))[
                pat.rows, pat.indices
            ],
            dtype=np.float64,
        ).ravel()
    A = sp.csr_array((values, pat.indices, pat.indptr), shape=(m, n))
    if result.partition == "bidirectional":
        assert S is not None
        assert W is not None
        back = result.decompress(B=A @ S, C=(A.T @ W.T).T)
    elif result.partition in ("column", "symmetric"):
        assert S is not None
        back = result.decompress(B=A @ S)
    else:
        assert W is not None
        back = result.decompress(C=(A.T @ W.T).T)
    if not (np.array_equal(back.indptr, pat.indptr) and np.array_equal(back.indices, pat.indices)):
        raise AssertionError("decompression does not have the pattern's CSR structure")
    bad = np.flatnonzero(back.data != values)
    if bad.size:
        k = int(bad[0])
        i, j = int(pat.rows[k]), int(pat.indices[k])
        raise AssertionError(
            f"decompression differs at ({i}, {j}): {back.data[k]!r} instead of {values[k]!r}"
        )


def _check_bidirectional_result(result: Any) -> None:
    """Groups, counts, recoverability and seed matrices of a bidirectional result."""
    pat = result.pattern
    m, n = pat.shape
    cg, rg = result.column_groups, result.row_groups
    p = check_groups(cg, n, name="column_groups", neutral=True)
    q = check_groups(rg, m, name="row_groups", neutral=True)
    if (p, q) != (result.n_forward, result.n_reverse) or p + q != result.n_colors:
        raise AssertionError(
            f"n_colors is {result.n_colors} (n_forward {result.n_forward}, n_reverse "
            f"{result.n_reverse}) but the groups use {p} forward and {q} reverse colours"
        )
    check_bicoloring(pat, cg, rg)
    if not (result.lower_bound <= p + q):
        raise AssertionError(f"lower_bound {result.lower_bound} exceeds n_colors {p + q}")
    S, W = result.seed_matrices()
    if S is None or W is None or S.shape != (n, p) or W.shape != (q, m):
        raise AssertionError("a bidirectional colouring needs S of shape (n, p), W of (q, m)")
    for j in range(n):
        want = np.zeros(p)
        if cg[j] >= 0:
            want[cg[j]] = 1.0
        if not np.array_equal(S[j], want):
            raise AssertionError(f"S row {j} is not the seed of forward colour {cg[j]}")
    for i in range(m):
        want = np.zeros(q)
        if rg[i] >= 0:
            want[rg[i]] = 1.0
        if not np.array_equal(W[:, i], want):
            raise AssertionError(f"W column {i} is not the seed of reverse colour {rg[i]}")


def _check_one_sided_result(result: Any) -> None:
    """Groups, count, structural orthogonality and seed matrix of a one-sided result."""
    pat = result.pattern
    m, n = pat.shape
    groups = result.groups
    n_vertices = n if result.partition == "column" else m
    p = check_groups(groups, n_vertices)
    if p != result.n_colors:
        raise AssertionError(f"n_colors is {result.n_colors} but the groups use {p}")
    check_structurally_orthogonal(pat, groups, result.partition)
    if not (result.lower_bound <= p):
        raise AssertionError(f"lower_bound {result.lower_bound} exceeds n_colors {p}")
    S, W = result.seed_matrices()
    if result.partition == "column":
        assert S is not None
        assert W is None
        assert S.shape == (n, p)
        for j in range(n):
            if S[j].sum() != 1.0 or S[j, groups[j]] != 1.0:
                raise AssertionError(f"S row {j} is not the unit vector of group {groups[j]}")
    else:
        assert W is not None
        assert S is None
        assert W.shape == (p, m)
        for i in range(m):
            if W[:, i].sum() != 1.0 or W[groups[i], i] != 1.0:
                raise AssertionError(f"W column {i} is not the unit vector of group {groups[i]}")
