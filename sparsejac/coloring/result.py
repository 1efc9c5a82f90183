"""The result of a colouring: groups, seed matrices, compression and exact decompression.

This module owns :class:`ColoringResult`. Decompression is a gather: for a column colouring
with groups ``c``, ``J[i, j] = B[i, c[j]]`` for every structural nonzero ``(i, j)``, so one
flat index array per memory layout of ``B`` is computed the first time it is needed and every
later call is a single :func:`numpy.take` into the pattern's CSR order. A row colouring is
the same with ``C[r[i], j]``.

A bidirectional colouring has forward colours ``c`` on some columns and reverse colours
``r`` on some rows (-1 elsewhere, the *neutral* colour). Each nonzero is read from ``B`` when
its column is coloured and no other coloured column of its row shares that colour, else
from ``C`` (its row is then coloured and alone with its colour in its column: the
construction guarantees it, and the constructor checks it). The choice is made once, so a
call is one compiled pass in which each nonzero reads one entry of ``B`` or one of ``C``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np
import scipy.sparse as sp

from sparsejac.coloring import _bikernels
from sparsejac.coloring.graph import PARTITIONS
from sparsejac.coloring.recovery import SymmetricRecovery, check_method
from sparsejac.pattern import SparsityPattern

__all__ = ["Candidate", "ColoringResult"]


@dataclass(frozen=True)
class Candidate:
    """One colouring tried by ``order="best"``.

    Attributes
    ----------
    name : str
        What produced it, e.g. ``"dsatur"``, ``"random#1"``, ``"incidence_degree@2"``
        (a restart with random tie-breaking) or ``"recolor"``; for a bidirectional search
        e.g. ``"largest_first"`` (a star bicolouring), ``"split:rows@1"`` or
        ``"star+recolorB"``; for ``partition="auto"``, the partition and its ``order``.
    n_colors : int
        Its number of colours (passes), or -1 for a pass stopped early.
    seconds : float
        Time it took.
    n_forward, n_reverse : int or None
        Its forward and reverse passes, where both kinds are possible (bidirectional and
        auto candidates); else None.

    Examples
    --------
    >>> import numpy as np, sparsejac
    >>> r = sparsejac.color(np.eye(3) + np.eye(3, k=1))
    >>> [(c.name, c.n_colors) for c in r.candidates]
    [('natural', 2)]
    """

    name: str
    n_colors: int
    seconds: float
    n_forward: int | None = None
    n_reverse: int | None = None


def _distinct(groups: np.ndarray, size: int) -> bool:
    """Whether ``groups`` (``size`` of them, in ``0 .. size - 1``) are all different."""
    return bool(np.all(np.bincount(groups[groups >= 0], minlength=size) == 1))


def _frozen_groups(groups: Any, length: int, n_colors: int, name: str) -> np.ndarray:
    a = np.array(groups, dtype=np.int64, copy=True)
    if a.shape != (length,):
        raise ValueError(f"`{name}` must have shape ({length},); got {a.shape}")
    if a.size and (a.min() < -1 or a.max() >= n_colors):
        raise ValueError(
            f"`{name}` values must lie in -1..{n_colors - 1} (-1 = not used); "
            f"got range {a.min()}..{a.max()}"
        )
    a.setflags(write=False)
    return a


@dataclass(frozen=True, eq=False, repr=False)
class ColoringResult:
    """A colouring of the columns and/or rows of a sparsity pattern, with exact decompression.

    Build one with :func:`sparsejac.color`. For a ``"column"`` colouring, columns of the
    same group share no row, so the ``n_colors`` products ``B = J @ S`` (one forward pass
    per colour) recover every nonzero of ``J``; for a ``"row"`` colouring, ``C = W @ J``
    (one reverse pass per colour). A ``"bidirectional"`` colouring needs both: ``p``
    forward passes ``B = J @ S`` and ``q`` reverse passes ``C = W @ J``, ``n_colors = p +
    q``, and every nonzero is read from one of them.

    Attributes
    ----------
    pattern : SparsityPattern
        The m×n pattern that was coloured.
    partition : {"column", "row", "bidirectional", "symmetric"}
        Which side was coloured: columns, rows, or some of both (``"bidirectional"``: both
        groups arrays are set, with -1 where a column or row is in no seed); or
        (``"symmetric"``, see ``method``) rows and columns of a symmetric matrix together:
        ``column_groups`` holds the colour of every vertex, ``B = H @ S`` as for columns.
    order : str
        What produced the colouring: an order name such as ``"dsatur"``, a callable's
        name, or ``"best:<candidate>"`` (with ``"+recolor"`` when iterated greedy
        recolouring improved it) for ``order="best"``.
    n_colors : int
        Number of groups: the number of products (passes) one Jacobian costs; for
        ``"bidirectional"``, forward plus reverse (``n_forward + n_reverse``, the neutral
        colour not counted).
    column_groups : ndarray of int64 or None
        Length n: the group of every column, ``0..p-1`` (``"column"``; ``"bidirectional"``
        with -1 for columns in no forward seed); None for ``"row"``.
    row_groups : ndarray of int64 or None
        Length m: the group of every row, ``0..q-1`` (``"row"``; ``"bidirectional"`` with
        -1 for rows in no reverse seed); None for ``"column"``.
    lower_bound : int
        No colouring of this partition has fewer groups: the largest number of nonzeros in
        a row (column partition) or in a column (row partition), at least 1; for
        ``"bidirectional"``, :func:`~sparsejac.coloring.graph.bidirectional_lower_bound`.
    seconds : float
        Wall time spent colouring.
    candidates : tuple of Candidate
        For ``order="best"``, every colouring tried, in order; else empty.
    work : float
        For ``order="best"``, the work the search spent, in the nominal units of
        :mod:`sparsejac.coloring.budget` (deterministic, unlike ``seconds``); else 0.
    method : {"star", "acyclic"} or None
        For a ``"symmetric"`` colouring (of a structurally symmetric pattern, e.g. a
        Hessian's, with ``column_groups`` the colour of every row and column): star
        colouring, decompressed directly, or acyclic colouring, decompressed by
        substitution (:mod:`~sparsejac.coloring.recovery`). None for the other partitions.

    Examples
    --------
    >>> import numpy as np
    >>> import sparsejac
    >>> J = np.array([[1.0, 2.0, 0.0, 0.0],
    ...               [0.0, 3.0, 4.0, 0.0],
    ...               [0.0, 0.0, 5.0, 6.0]])
    >>> r = sparsejac.color(J, "column", order="natural")
    >>> r.n_colors, r.column_groups.tolist(), r.lower_bound
    (2, [0, 1, 0, 1], 2)
    >>> S, W = r.seed_matrices()
    >>> B = J @ S  # two products instead of four
    >>> r.decompress(B).toarray()
    array([[1., 2., 0., 0.],
           [0., 3., 4., 0.],
           [0., 0., 5., 6.]])
    """

    pattern: SparsityPattern
    partition: str
    order: str
    n_colors: int
    column_groups: np.ndarray | None
    row_groups: np.ndarray | None
    lower_bound: int
    seconds: float = 0.0
    candidates: tuple[Candidate, ...] = field(default=())
    work: float = 0.0
    method: str | None = None
    # Derived in __post_init__: (forward, reverse) passes, and for a bidirectional colouring
    # whether each nonzero (CSR order) is read from B (else from C).
    _sides: tuple[int, int] = field(init=False, repr=False, default=(0, 0))
    _from_b: np.ndarray | None = field(init=False, repr=False, default=None)
    _recovery: SymmetricRecovery | None = field(init=False, repr=False, default=None)

    def __post_init__(self) -> None:
        m, n = self.pattern.shape
        allowed = [*PARTITIONS, "symmetric"]
        if self.partition not in allowed:
            raise ValueError(
                f"Unknown `partition` {self.partition!r}; expected one of {allowed}."
            )
        total = int(self.n_colors)
        object.__setattr__(self, "n_colors", total)
        if (self.partition == "symmetric") != (self.method is not None):
            raise ValueError(
                "`method` ('star' or 'acyclic') is required for a symmetric colouring and "
                f"only for it; got method={self.method!r} for partition {self.partition!r}"
            )
        if self.partition == "bidirectional":
            self._init_bidirectional(total)
            return
        for name, length in (("column_groups", n), ("row_groups", m)):
            value = getattr(self, name)
            if value is not None:
                object.__setattr__(self, name, _frozen_groups(value, length, total, name))
        # A one-sided colouring needs its groups array, without -1.
        needed = "row_groups" if self.partition == "row" else "column_groups"
        groups = getattr(self, needed)
        if groups is None:
            raise ValueError(f"a {self.partition} colouring needs `{needed}`; got None")
        if groups.size and groups.min() < 0:
            raise ValueError(f"`{needed}` of a {self.partition} colouring must not hold -1")
        sides = (0, total) if self.partition == "row" else (total, 0)
        object.__setattr__(self, "_sides", sides)
        if self.partition == "symmetric":
            recovery = SymmetricRecovery(self.pattern, groups, total, check_method(self.method))
            object.__setattr__(self, "_recovery", recovery)

    def _init_bidirectional(self, total: int) -> None:
        """Validate both groups arrays and choose, per nonzero, whether B or C holds it."""
        m, n = self.pattern.shape
        sides = []
        for name, length in (("column_groups", n), ("row_groups", m)):
            value = getattr(self, name)
            if value is None:
                raise ValueError(f"a bidirectional colouring needs `{name}`; got None")
            raw = np.asarray(value, dtype=np.int64)
            top = max(int(raw.max()) + 1, 0) if raw.size else 0
            groups = _frozen_groups(raw, length, top, name)
            object.__setattr__(self, name, groups)
            sides.append(top)
        p, q = sides
        if p + q != total:
            raise ValueError(
                f"`n_colors` is {total} but the groups use {p} forward and {q} reverse "
                f"colours ({p + q} in all)"
            )
        object.__setattr__(self, "_sides", (p, q))
        pat = self.pattern
        for k, size, line in ((0, n, self.column_groups), (1, m, self.row_groups)):
            if (p, q)[k] == size and (p, q)[1 - k] == 0 and line is not None and _distinct(
                    line, size):
                # one product per column (row), the other side unseeded: each nonzero alone
                # in its product (a dense Jacobian's; 2.6 ms of a curve fit's preparation)
                from_b = np.full(pat.nnz, k == 0)
                from_b.setflags(write=False)
                object.__setattr__(self, "_from_b", from_b)
                return
        from_b, from_c = _bikernels.recoverable(
            pat.indptr,
            pat.indices,
            pat.col_indptr,
            pat.col_indices,
            pat.csc_to_csr,
            self.column_groups,
            self.row_groups,
            p,
            q,
        )
        lost = np.flatnonzero(~(from_b | from_c))
        if lost.size:
            k = int(lost[0])
            raise ValueError(
                f"these groups do not recover J[{int(pat.rows[k])}, {int(pat.indices[k])}] "
                f"(nor {lost.size - 1} other nonzeros): neither B nor C holds it alone"
            )
        from_b.setflags(write=False)
        object.__setattr__(self, "_from_b", from_b)

    # -- accessors ------------------------------------------------------------------------

    @property
    def shape(self) -> tuple[int, int]:
        """Shape ``(m, n)`` of the Jacobian."""
        return self.pattern.shape

    @property
    def groups(self) -> np.ndarray:
        """The groups of the coloured side (``column_groups`` or ``row_groups``).

        Examples
        --------
        >>> import numpy as np, sparsejac
        >>> sparsejac.color(np.eye(3), "row").groups.tolist()
        [0, 0, 0]
        """
        if self.partition in ("column", "symmetric"):
            g = self.column_groups
        elif self.partition == "row":
            g = self.row_groups
        else:
            raise ValueError(f"a {self.partition} colouring has no single `groups` array")
        assert g is not None  # guaranteed by __post_init__
        return g

    @property
    def n_forward(self) -> int:
        """Forward passes ``p`` (the width of ``B``): ``n_colors`` for a column colouring.

        Examples
        --------
        >>> import numpy as np, sparsejac
        >>> r = sparsejac.color(np.eye(3), "row")
        >>> r.n_forward, r.n_reverse
        (0, 1)
        """
        return self._sides[0]

    @property
    def n_reverse(self) -> int:
        """Reverse passes ``q`` (the height of ``C``): ``n_colors`` for a row colouring.

        Examples
        --------
        >>> import numpy as np, sparsejac
        >>> sparsejac.color(np.eye(3), "column").n_reverse
        0
        """
        return self._sides[1]

    @property
    def compressed_shape(self) -> tuple[int, int]:
        """Shape of the compressed matrix: ``B`` (m, p) or ``C`` (p, n).

        A bidirectional colouring has two; see :attr:`compressed_shapes`.
        """
        m, n = self.pattern.shape
        if self.partition == "bidirectional":
            raise ValueError(
                "a bidirectional colouring has two compressed matrices; use "
                "`compressed_shapes` (B then C)"
            )
        return (self.n_colors, n) if self.partition == "row" else (m, self.n_colors)

    @property
    def compressed_shapes(self) -> tuple[tuple[int, int], tuple[int, int]]:
        """Shapes of ``B = J @ S`` (m, p) and ``C = W @ J`` (q, n); p or q may be 0.

        Examples
        --------
        >>> import numpy as np, sparsejac
        >>> sparsejac.color(np.eye(3, 4), "column").compressed_shapes
        ((3, 1), (0, 4))
        """
        m, n = self.pattern.shape
        return (m, self.n_forward), (self.n_reverse, n)

    def __repr__(self) -> str:
        method = "" if self.method is None else f", method={self.method!r}"
        return (
            f"ColoringResult(partition={self.partition!r}{method}, order={self.order!r}, "
            f"n_colors={self.n_colors}, lower_bound={self.lower_bound}, "
            f"shape={self.pattern.shape}, nnz={self.pattern.nnz})"
        )

    # -- seeds and compression ------------------------------------------------------------

    def seed_matrices(self) -> tuple[np.ndarray | None, np.ndarray | None]:
        """Dense 0/1 seed matrices ``(S, W)``; the one this partition does not use is None.

        A bidirectional colouring returns both (one may have zero width or height).

        Returns
        -------
        S : ndarray of float64, shape (n, p), or None
            Column seeds: ``S[j, column_groups[j]] = 1`` (no 1 in the row of a column in
            no seed); ``B = J @ S``.
        W : ndarray of float64, shape (q, m), or None
            Row seeds: ``W[row_groups[i], i] = 1``; ``C = W @ J``.

        Examples
        --------
        >>> import numpy as np, sparsejac
        >>> S, W = sparsejac.color(np.array([[1, 1, 0], [0, 0, 1]]), "column",
        ...                        order="natural").seed_matrices()
        >>> S
        array([[1., 0.],
               [0., 1.],
               [1., 0.]])
        >>> W is None
        True
        """
        m, n = self.pattern.shape
        S = W = None
        if self.partition != "row":
            assert self.column_groups is not None
            g = self.column_groups
            S = np.zeros((n, self.n_forward))
            used = np.flatnonzero(g >= 0)
            S[used, g[used]] = 1.0
        if self.partition in ("row", "bidirectional"):
            assert self.row_groups is not None
            g = self.row_groups
            W = np.zeros((self.n_reverse, m))
            used = np.flatnonzero(g >= 0)
            W[g[used], used] = 1.0
        return S, W

    def compress(self, J: Any) -> Any:
        """Compressed Jacobian: ``B = J @ S`` (column) or ``C = W @ J`` (row), without AD.

        Parameters
        ----------
        J : array_like or scipy sparse, shape (m, n)
            A matrix whose nonzeros lie in the pattern.

        Returns
        -------
        ndarray of float64, or tuple of two
            ``B`` of shape (m, p) or ``C`` of shape (p, n); for a bidirectional colouring
            the pair ``(B, C)``, so that ``decompress(*compress(J))`` gives ``J`` back.

        Raises
        ------
        ValueError
            ``J`` does not have the pattern's shape.

        Examples
        --------
        >>> import numpy as np, sparsejac
        >>> J = np.array([[1.0, 2.0, 0.0], [0.0, 0.0, 3.0]])
        >>> sparsejac.color(J, "column", order="natural").compress(J)
        array([[1., 2.],
               [3., 0.]])
        """
        A = sp.csr_array(J) if sp.issparse(J) else sp.csr_array(np.asarray(J, dtype=float))
        if A.shape != self.pattern.shape:
            raise ValueError(
                f"`J` has shape {A.shape} but this colouring is of a {self.pattern.shape} pattern"
            )
        S, W = self.seed_matrices()
        B = None if S is None else np.asarray(A @ S, dtype=np.float64)
        C = None if W is None else np.asarray((A.T @ W.T).T, dtype=np.float64)
        if self.partition == "bidirectional":
            return B, C
        return C if self.partition == "row" else B

    # -- decompression --------------------------------------------------------------------

    @cached_property
    def _seed_groups(self) -> tuple[np.ndarray, int, np.ndarray, int]:
        """Column groups, forward products, row groups, reverse products (-1: not seeded).

        What the engines pass to the products at every call, built once.
        """
        m, n = self.pattern.shape
        cg = self.column_groups if self.column_groups is not None else np.full(n, -1)
        rg = self.row_groups if self.row_groups is not None else np.full(m, -1)
        return cg, self.n_forward, rg, self.n_reverse

    @cached_property
    def _gather_c(self) -> np.ndarray:
        """Flat indices into a C-contiguous compressed matrix, one per nonzero (CSR order)."""
        pat = self.pattern
        if self.partition == "column":
            idx: np.ndarray = pat.rows * self.n_colors + self.groups[pat.indices]
        else:
            idx = self.groups[pat.rows] * pat.shape[1] + pat.indices
        idx.setflags(write=False)
        return idx

    @cached_property
    def _gather_f(self) -> np.ndarray:
        """Flat indices into a Fortran-contiguous compressed matrix."""
        pat = self.pattern
        if self.partition == "column":
            idx: np.ndarray = self.groups[pat.indices] * pat.shape[0] + pat.rows
        else:
            idx = pat.indices * self.n_colors + self.groups[pat.rows]
        idx.setflags(write=False)
        return idx

    def _gather_two(self, b_fortran: bool, c_fortran: bool) -> np.ndarray:
        """Index per nonzero into B (``>= 0``) or C (``~index``), for the given layouts."""
        cache: dict[tuple[bool, bool], np.ndarray] = self.__dict__.setdefault("_two", {})
        key = (b_fortran, c_fortran)
        if key not in cache:
            pat = self.pattern
            m, n = pat.shape
            p, q = self.n_forward, self.n_reverse
            assert self.column_groups is not None
            assert self.row_groups is not None
            cg = self.column_groups[pat.indices]
            rg = self.row_groups[pat.rows]
            b = cg * m + pat.rows if b_fortran else pat.rows * p + cg
            c = pat.indices * q + rg if c_fortran else rg * n + pat.indices
            assert self._from_b is not None
            idx: np.ndarray = np.where(self._from_b, b, ~c)
            idx.setflags(write=False)
            cache[key] = idx
        return cache[key]

    def _side(self, a: Any, name: str, shape: tuple[int, int], what: str) -> np.ndarray:
        """Check one compressed matrix of a bidirectional colouring; return it as float64."""
        count = shape[1] if name == "B" else shape[0]
        kind = "forward" if name == "B" else "reverse"
        if a is None:
            if count == 0:
                return np.zeros(shape)
            raise ValueError(
                f"this bidirectional colouring has {count} {kind} colours, so it needs "
                f"`{name}` = {what} of shape {shape}; got None"
            )
        arr = np.asarray(a)
        if arr.shape != shape:
            raise ValueError(
                f"`{name}` has shape {arr.shape} but this bidirectional colouring of a "
                f"{self.pattern.shape} pattern with {count} {kind} colours expects {shape}"
            )
        return arr if arr.dtype == np.float64 else arr.astype(np.float64)

    def _compressed(self, B: Any, C: Any) -> np.ndarray:
        forward = self.partition != "row"
        used, unused = ("B", "C") if forward else ("C", "B")
        given = B if forward else C
        other = C if forward else B
        what = {"column": "J @ S", "row": "W @ J"}.get(self.partition, "H @ S")
        if other is not None:
            raise ValueError(
                f"a {self.partition} colouring is decompressed from `{used}` = {what}; "
                f"`{unused}` must be None, got an array of shape {np.shape(other)}"
            )
        if given is None:
            raise ValueError(
                f"a {self.partition} colouring needs `{used}` = {what} of shape "
                f"{self.compressed_shape}; got None"
            )
        a = np.asarray(given)
        if a.shape != self.compressed_shape:
            raise ValueError(
                f"`{used}` has shape {a.shape} but this {self.partition} colouring of a "
                f"{self.pattern.shape} pattern with {self.n_colors} colours expects "
                f"{self.compressed_shape}"
            )
        if a.dtype != np.float64:
            a = a.astype(np.float64)
        return a

    def decompress_data(
        self, B: Any = None, C: Any = None, out: np.ndarray | None = None
    ) -> np.ndarray:
        """Return the nonzero values of ``J`` in the pattern's CSR order (one gather).

        Use it to refill a fixed ``csr_array``'s ``.data`` on every evaluation.

        Parameters
        ----------
        B : array_like, shape (m, p), optional
            ``J @ S`` -- required for a column colouring, and for a bidirectional one with
            forward colours.
        C : array_like, shape (q, n), optional
            ``W @ J`` -- required for a row colouring, and for a bidirectional one with
            reverse colours.
        out : ndarray of float64, shape (nnz,), optional
            Where to write the values.

        Returns
        -------
        ndarray of float64, shape (nnz,)
            ``out`` if given.

        Raises
        ------
        ValueError
            The needed array is missing, the other one is given, a shape is wrong, or
            ``out`` is not a float64 array of shape (nnz,).

        Examples
        --------
        >>> import numpy as np, sparsejac
        >>> J = np.array([[1.0, 2.0, 0.0], [0.0, 0.0, 3.0]])
        >>> r = sparsejac.color(J, "row")
        >>> r.decompress_data(C=r.compress(J))
        array([1., 2., 3.])
        >>> r.decompress_data(C=np.zeros((3, 3)))
        Traceback (most recent call last):
            ...
        ValueError: `C` has shape (3, 3) but this row colouring of a (2, 3) pattern with \
1 colours expects (1, 3)
        """
        if self.partition == "bidirectional":
            (m, p), (q, n) = self.compressed_shapes
            b = self._side(B, "B", (m, p), "J @ S")
            c = self._side(C, "C", (q, n), "W @ J")
        else:
            a = self._compressed(B, C)
        if out is not None and (
            not isinstance(out, np.ndarray)
            or out.shape != (self.pattern.nnz,)
            or out.dtype != np.float64
            or not out.flags.writeable
        ):
            got = (
                f"{out.dtype} array of shape {out.shape}"
                + ("" if out.flags.writeable else ", read-only")
                if isinstance(out, np.ndarray)
                else type(out).__name__
            )
            raise ValueError(
                f"`out` must be a writeable float64 array of shape ({self.pattern.nnz},); "
                f"got {got}"
            )
        if self.partition == "bidirectional":
            b_f = not b.flags.c_contiguous and b.flags.f_contiguous
            c_f = not c.flags.c_contiguous and c.flags.f_contiguous
            bflat = b.reshape(-1, order="F") if b_f else np.ascontiguousarray(b).reshape(-1)
            cflat = c.reshape(-1, order="F") if c_f else np.ascontiguousarray(c).reshape(-1)
            if out is None:
                out = np.empty(self.pattern.nnz)
            result: np.ndarray = _bikernels.gather2(bflat, cflat, self._gather_two(b_f, c_f), out)
            return result
        if self._recovery is not None:
            return self._recovery.decompress_data(a, out)
        if a.flags.c_contiguous:
            flat, idx = a.reshape(-1), self._gather_c
        elif a.flags.f_contiguous:
            flat, idx = a.reshape(-1, order="F"), self._gather_f
        else:
            flat, idx = np.ascontiguousarray(a).reshape(-1), self._gather_c
        return np.take(flat, idx, out=out)

    def decompress(self, B: Any = None, C: Any = None) -> sp.csr_array:
        """Recover ``J`` exactly from its compressed form, as a ``csr_array``.

        Parameters
        ----------
        B : array_like, shape (m, p), optional
            ``J @ S`` -- required for a column colouring, and for a bidirectional one with
            forward colours.
        C : array_like, shape (q, n), optional
            ``W @ J`` -- required for a row colouring, and for a bidirectional one with
            reverse colours.

        Returns
        -------
        scipy.sparse.csr_array of float64, shape (m, n)
            With the pattern's structure (sorted indices; structural zeros kept).

        Raises
        ------
        ValueError
            The needed array is missing, the other one is given, or a shape is wrong.

        See Also
        --------
        decompress_data : the values only, optionally into a preallocated array.

        Examples
        --------
        >>> import numpy as np, sparsejac
        >>> J = np.array([[1.0, 0.0, 2.0], [0.0, 3.0, 0.0]])
        >>> r = sparsejac.color(J, "column")
        >>> r.n_colors
        2
        >>> r.decompress(J @ r.seed_matrices()[0]).toarray()
        array([[1., 0., 2.],
               [0., 3., 0.]])
        >>> r.decompress()
        Traceback (most recent call last):
            ...
        ValueError: a column colouring needs `B` = J @ S of shape (2, 2); got None
        """
        data = self.decompress_data(B, C)
        pat = self.pattern
        out = sp.csr_array(
            (data, pat.indices.copy(), pat.indptr.copy()), shape=pat.shape, copy=False
        )
        out.has_sorted_indices = True
        return out

    # -- figures --------------------------------------------------------------------------

    def stats(self) -> dict[str, Any]:
        """Return the figures ``sparsejac report`` prints, as a JSON-ready dict.

        Returns
        -------
        dict
            ``shape``, ``nnz``, ``density``, ``partition``, ``order``, ``n_colors``,
            ``n_forward``, ``n_reverse``, ``lower_bound``, ``gap`` (``n_colors -
            lower_bound``), ``compression`` (passes saved: n/p for columns, m/p for rows,
            ``min(m, n) / n_colors`` for bidirectional), ``seconds`` and ``candidates``
            (list of ``{"name", "n_colors", "seconds"}``).

        Examples
        --------
        >>> import numpy as np, sparsejac
        >>> s = sparsejac.color(np.eye(4), "column", order="natural").stats()
        >>> s["n_colors"], s["lower_bound"], s["gap"], s["compression"]
        (1, 1, 0, 4.0)
        """
        m, n = self.pattern.shape
        n_vertices = {"column": n, "row": m, "symmetric": n}.get(self.partition, min(m, n))
        extra: dict[str, Any] = {}
        if self._recovery is not None:
            extra = {"method": self.method, "depth": self._recovery.depth}
        return {
            "shape": [m, n],
            "nnz": self.pattern.nnz,
            "density": self.pattern.density,
            "partition": self.partition,
            "order": self.order,
            "n_colors": self.n_colors,
            "n_forward": self.n_forward,
            "n_reverse": self.n_reverse,
            "lower_bound": self.lower_bound,
            "gap": self.n_colors - self.lower_bound,
            "compression": n_vertices / max(self.n_colors, 1),
            "seconds": self.seconds,
            "candidates": [
                {"name": c.name, "n_colors": c.n_colors, "seconds": c.seconds}
                for c in self.candidates
            ],
            **extra,
        }
