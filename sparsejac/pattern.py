"""The sparsity pattern: sparsejac's internal immutable m×n boolean matrix.

This module owns :class:`SparsityPattern` and the conversion of every accepted input
(scipy sparse matrices and arrays, dense arrays, Matrix Market ``.mtx`` and scipy ``.npz``
files) into it. Every public function of sparsejac that takes a ``sparsity`` argument goes
through :func:`as_pattern`, so the rules live in one place:

* a stored entry whose value is zero is *not* part of the pattern (explicit zeros dropped);
* symmetric Matrix Market storage is expanded to both triangles;
* index arrays are ``int64``, sorted within each row (CSR) and each column (CSC).

At the public boundary a pattern is a ``scipy.sparse.csr_array`` of ``bool``
(:meth:`SparsityPattern.to_csr_array`), so it drops straight into scipy's ``jac_sparsity=``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

from sparsejac.numeric import sorted_unique

__all__ = ["PatternFileError", "SparsityPattern", "as_pattern", "read_pattern_file"]

IndexArray = np.ndarray  # int64, read-only


class PatternFileError(ValueError):
    """A matrix file could not be read as a sparsity pattern.

    The message names the file and says what is wrong with it.

    Examples
    --------
    >>> from sparsejac.pattern import PatternFileError, read_pattern_file
    >>> try:
    ...     read_pattern_file("no_such_file.mtx")
    ... except PatternFileError as exc:
    ...     print(exc)
    no_such_file.mtx: no such file
    """


def _readonly(a: np.ndarray) -> np.ndarray:
    a = np.ascontiguousarray(a, dtype=np.int64)
    a.setflags(write=False)
    return a


class SparsityPattern:
    """Immutable m×n sparsity pattern with both CSR and CSC index arrays.

    Build one with :func:`as_pattern` (or :meth:`from_any`) rather than the constructor.

    Attributes
    ----------
    shape : tuple of int
        ``(m, n)``: rows are outputs, columns are inputs.
    nnz : int
        Number of structural nonzeros.
    indptr, indices : ndarray of int64
        CSR index arrays, column indices sorted within each row.
    col_indptr, col_indices : ndarray of int64
        CSC index arrays, row indices sorted within each column.
    rows : ndarray of int64
        Row index of every nonzero in CSR order (so nonzero ``k`` is
        ``(rows[k], indices[k])``).
    csc_to_csr : ndarray of int64
        For nonzero ``k`` in CSC order, its position in CSR order.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsejac.pattern import as_pattern
    >>> p = as_pattern(np.array([[1.0, 0.0, 2.0], [0.0, 3.0, 0.0]]))
    >>> p.shape, p.nnz
    ((2, 3), 3)
    >>> p.indices.tolist(), p.col_indices.tolist()
    ([0, 2, 1], [0, 1, 0])
    >>> p.to_csr_array().toarray()
    array([[ True, False,  True],
           [False,  True, False]])
    """

    __slots__ = (
        "_col_indices",
        "_col_indptr",
        "_csc_to_csr",
        "_csr_to_csc",
        "_rows",
        "indices",
        "indptr",
        "nnz",
        "shape",
    )

    shape: tuple[int, int]
    nnz: int
    indptr: IndexArray
    indices: IndexArray
    _col_indptr: IndexArray | None
    _col_indices: IndexArray | None
    _csc_to_csr: IndexArray | None
    _csr_to_csc: IndexArray | None
    _rows: IndexArray | None

    def __init__(self, shape: tuple[int, int], rows: Any, cols: Any) -> None:
        """Build from coordinate arrays; duplicates are merged.

        Parameters
        ----------
        shape : tuple of int
            ``(m, n)``.
        rows, cols : array_like of int
            Row and column index of each structural nonzero (any order, duplicates allowed).
        """
        m, n = int(shape[0]), int(shape[1])
        rows = np.asarray(rows, dtype=np.int64).ravel()
        cols = np.asarray(cols, dtype=np.int64).ravel()
        # One sort by (row, col) gives CSR order; dropping repeats merges duplicates.
        key = rows * max(n, 1) + cols
        key = sorted_unique(key)
        r = key // max(n, 1)
        c = key - r * max(n, 1)
        indptr = np.zeros(m + 1, dtype=np.int64)
        np.cumsum(np.bincount(r, minlength=m), out=indptr[1:])
        # CSC order: stable sort of CSR positions by column keeps rows sorted in a column.
        csc_to_csr = np.argsort(c, kind="stable")
        col_indptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.bincount(c, minlength=n), out=col_indptr[1:])
        object.__setattr__(self, "shape", (m, n))
        object.__setattr__(self, "nnz", int(key.size))
        object.__setattr__(self, "indptr", _readonly(indptr))
        object.__setattr__(self, "indices", _readonly(c))
        object.__setattr__(self, "_rows", _readonly(r))
        object.__setattr__(self, "_col_indptr", _readonly(col_indptr))
        object.__setattr__(self, "_col_indices", _readonly(r[csc_to_csr]))
        object.__setattr__(self, "_csc_to_csr", _readonly(csc_to_csr))
        object.__setattr__(self, "_csr_to_csc", None)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("SparsityPattern is immutable")

    @property
    def rows(self) -> IndexArray:
        """The row of every nonzero, in CSR order (built on first use from ``indptr``)."""
        r = self._rows
        if r is None:
            r = _readonly(np.repeat(np.arange(self.shape[0], dtype=np.int64),
                                    np.diff(self.indptr)))
            object.__setattr__(self, "_rows", r)
        out: IndexArray = r
        return out

    @property
    def col_indptr(self) -> IndexArray:
        """CSC column pointer (rebuilt on use after :meth:`release_csc`)."""
        p = self._col_indptr
        out: IndexArray = p if p is not None else self._build_csc()[0]
        return out

    @property
    def col_indices(self) -> IndexArray:
        """The row of every nonzero, in CSC order (rebuilt on use after :meth:`release_csc`)."""
        c = self._col_indices
        out: IndexArray = c if c is not None else self._build_csc()[1]
        return out

    def _build_csc(self) -> tuple[IndexArray, IndexArray, IndexArray]:
        """Build (again) and keep the CSC arrays; returns them (a concurrent release is safe)."""
        m, n = self.shape
        arrays = tuple(_readonly(a) for a in _transpose_positions(m, n, self.indptr,
                                                                 self.indices))
        object.__setattr__(self, "_col_indptr", arrays[0])
        object.__setattr__(self, "_col_indices", arrays[1])
        object.__setattr__(self, "_csc_to_csr", arrays[2])
        object.__setattr__(self, "_csr_to_csc", None)
        return arrays  # type: ignore[return-value]

    def release_csc(self) -> None:
        """Drop the CSC arrays; they are rebuilt when next used.

        The pattern's value does not change (it stays immutable): a prepared Jacobian that
        assembles its values directly keeps only the CSR arrays resident (16 bytes per
        nonzero less).

        Examples
        --------
        >>> import numpy as np
        >>> from sparsejac.pattern import as_pattern
        >>> p = as_pattern(np.array([[1, 0], [1, 1]]))
        >>> p.release_csc()
        >>> p.col_indices.tolist()
        [0, 1, 1]
        """
        for name in ("_col_indptr", "_col_indices", "_csc_to_csr", "_csr_to_csc"):
            object.__setattr__(self, name, None)

    @property
    def csc_to_csr(self) -> IndexArray:
        """The CSR position of every nonzero, in CSC order.

        For a pattern made from CSC arrays it is built on first use, as the inverse of their
        CSR order (colouring does not need it).
        """
        p = self._csc_to_csr
        inverse = self._csr_to_csc
        if p is None and inverse is None:
            return self._build_csc()[2]
        if p is None:
            assert inverse is not None
            p = np.empty_like(inverse)
            p[inverse] = np.arange(inverse.size, dtype=np.int64)
            p = _readonly(p)
            object.__setattr__(self, "_csc_to_csr", p)
            object.__setattr__(self, "_csr_to_csc", None)
        out: IndexArray = p
        return out

    def __reduce__(self) -> tuple[Any, ...]:
        # rebuilt from its coordinates (pickle, copy): the constructor re-derives the rest
        return (SparsityPattern, (self.shape, np.array(self.rows), np.array(self.indices)))

    def __copy__(self) -> SparsityPattern:
        return self  # immutable: a copy is the object itself

    def __deepcopy__(self, memo: dict[int, Any]) -> SparsityPattern:
        return self

    # -- construction -------------------------------------------------------------------

    @classmethod
    def from_any(cls, obj: Any, *, name: str = "sparsity") -> SparsityPattern:
        """Convert ``obj`` to a pattern; see :func:`as_pattern`."""
        return as_pattern(obj, name=name)

    # -- derived views ------------------------------------------------------------------

    @property
    def T(self) -> SparsityPattern:
        """The transposed pattern (n×m)."""
        return SparsityPattern((self.shape[1], self.shape[0]), self.indices, self.rows)

    @property
    def row_counts(self) -> np.ndarray:
        """Number of nonzeros in each row."""
        return np.diff(self.indptr)

    @property
    def col_counts(self) -> np.ndarray:
        """Number of nonzeros in each column."""
        return np.diff(self.col_indptr)

    @property
    def density(self) -> float:
        """Fraction of entries that are structural nonzeros."""
        m, n = self.shape
        return self.nnz / (m * n) if m * n else 0.0

    def to_csr_array(self) -> sp.csr_array:
        """The pattern as a ``scipy.sparse.csr_array`` of ``bool``."""
        data = np.ones(self.nnz, dtype=bool)
        return sp.csr_array(
            (data, self.indices.copy(), self.indptr.copy()), shape=self.shape
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, SparsityPattern):
            return NotImplemented
        return (
            self.shape == other.shape
            and np.array_equal(self.indptr, other.indptr)
            and np.array_equal(self.indices, other.indices)
        )

    def __hash__(self) -> int:
        return hash((self.shape, self.nnz, self.indices[:64].tobytes()))

    def __repr__(self) -> str:
        m, n = self.shape
        return f"SparsityPattern(shape=({m}, {n}), nnz={self.nnz})"


def _transpose_positions(m: int, n: int, indptr: np.ndarray, indices: np.ndarray
                         ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """CSC arrays of a canonical CSR structure, and each CSC entry's CSR position.

    scipy's compiled CSR→CSC conversion is a counting sort, linear in ``nnz + n``; carrying
    the CSR positions as the data gives the permutation (rows stay sorted in each column).
    """
    nnz = int(indices.size)
    try:  # scipy's compiled counting sort, straight into int64 arrays (no copies, no checks)
        from scipy.sparse import _sparsetools

        col_indptr = np.empty(n + 1, dtype=np.int64)
        col_indices = np.empty(nnz, dtype=np.int64)
        positions = np.empty(nnz, dtype=np.int64)
        _sparsetools.csr_tocsc(m, n, np.asarray(indptr, dtype=np.int64),
                               np.asarray(indices, dtype=np.int64),
                               np.arange(nnz, dtype=np.int64), col_indptr, col_indices,
                               positions)
        return col_indptr, col_indices, positions
    except (ImportError, AttributeError, TypeError, ValueError):  # pragma: no cover - scipy API
        pos = np.arange(nnz, dtype=np.float64 if nnz >= 2**31 else np.int32)
        csc = sp.csr_array((pos, indices, indptr), shape=(m, n)).tocsc()
        return (csc.indptr.astype(np.int64), csc.indices.astype(np.int64),
                csc.data.astype(np.int64))


def _from_compressed(a: Any) -> SparsityPattern | None:
    """A canonical CSR or CSC input without explicit zeros, in linear time (no sort).

    Returns None when ``a`` is not canonical or stores zeros (the general path handles it).
    """
    fmt = a.format
    if fmt not in ("csr", "csc") or not a.has_canonical_format:
        return None
    if np.count_nonzero(a.data) != a.data.size:  # explicit zeros: not structural
        return None
    m, n = (int(a.shape[0]), int(a.shape[1]))
    major = np.asarray(a.indptr, dtype=np.int64)
    minor = np.asarray(a.indices, dtype=np.int64)
    csc_to_csr = csr_to_csc = None
    if fmt == "csr":
        indptr, indices = major, minor
        col_indptr, col_indices, csc_to_csr = _transpose_positions(m, n, indptr, indices)
    else:  # the CSC arrays are the transpose's CSR arrays; their inverse waits until used
        col_indptr, col_indices = major, minor
        indptr, indices, csr_to_csc = _transpose_positions(n, m, col_indptr, col_indices)
    pattern = object.__new__(SparsityPattern)
    object.__setattr__(pattern, "_rows", None)  # built on first use
    for name, value in (("indptr", indptr), ("indices", indices),
                        ("_col_indptr", col_indptr), ("_col_indices", col_indices),
                        ("_csc_to_csr", csc_to_csr), ("_csr_to_csc", csr_to_csc)):
        if value is None:
            object.__setattr__(pattern, name, None)
            continue
        if np.may_share_memory(value, a.indptr) or np.may_share_memory(value, a.indices):
            value = value.copy()  # never freeze (or share) the caller's arrays
        object.__setattr__(pattern, name, _readonly(value))
    object.__setattr__(pattern, "shape", (m, n))
    object.__setattr__(pattern, "nnz", int(indices.size))
    return pattern


def _check_indices(a: Any, name: str) -> None:
    """Refuse a CSR, CSC or COO input whose index arrays do not describe a matrix of its shape.

    scipy checks them when it builds one, not after the arrays are changed in place or read
    from a file; a conversion would then read or write out of bounds.
    """
    fmt, (m, n) = a.format, a.shape
    if fmt == "coo":
        for what, idx, size in (("row", a.coords[0], m), ("column", a.coords[-1], n)):
            if idx.size and (int(idx.min()) < 0 or int(idx.max()) >= size):
                raise ValueError(f"`{name}` has a {what} index outside 0 .. {size - 1} (min "
                                 f"{int(idx.min())}, max {int(idx.max())}): not a valid matrix")
        return
    if fmt not in ("csr", "csc"):
        return
    major, minor = (m, n) if fmt == "csr" else (n, m)
    indptr, indices = np.asarray(a.indptr), np.asarray(a.indices)
    what = "column" if fmt == "csr" else "row"
    if (indptr.shape != (major + 1,) or int(indptr[0]) != 0 or int(indptr[-1]) > indices.size
            or bool(np.any(np.diff(indptr) < 0))):
        raise ValueError(f"`{name}` ({fmt}) has an invalid indptr: it must hold {major + 1} "
                         f"non-decreasing offsets from 0 to at most {indices.size}")
    used = indices[:int(indptr[-1])]
    if used.size and (int(used.min()) < 0 or int(used.max()) >= minor):
        raise ValueError(f"`{name}` ({fmt}) has a {what} index outside 0 .. {minor - 1} (min "
                         f"{int(used.min())}, max {int(used.max())}): not a valid matrix")


def _from_scipy(a: Any) -> SparsityPattern:
    fast = _from_compressed(a)
    if fast is not None:
        return fast
    coo = sp.coo_array(a)
    keep = coo.data != 0
    return SparsityPattern(coo.shape, coo.row[keep], coo.col[keep])


def read_pattern_file(path: str | os.PathLike[str]) -> SparsityPattern:
    """Read a Matrix Market (``.mtx``) or scipy ``.npz`` file as a pattern.

    Parameters
    ----------
    path : str or path-like
        File to read. ``.mtx`` files are read with :func:`scipy.io.mmread` (symmetric
        storage expanded, explicit zeros dropped); ``.npz`` files either hold a sparse
        matrix saved by :func:`scipy.sparse.save_npz` or a single dense 2-D array.

    Returns
    -------
    SparsityPattern

    Raises
    ------
    PatternFileError
        The file is missing, has another extension, or does not hold a 2-D matrix.

    Examples
    --------
    >>> import tempfile, os, numpy as np, scipy.io, scipy.sparse as sp
    >>> from sparsejac.pattern import read_pattern_file
    >>> d = tempfile.mkdtemp()
    >>> scipy.io.mmwrite(os.path.join(d, "a.mtx"), sp.coo_array(np.eye(3)))
    >>> read_pattern_file(os.path.join(d, "a.mtx"))
    SparsityPattern(shape=(3, 3), nnz=3)
    """
    if not os.fspath(path):
        raise PatternFileError("an empty file name; give a .mtx or .npz file")
    p = Path(path)
    if p.is_dir():
        raise PatternFileError(f"{p}: is a directory; give a .mtx or .npz file")
    if p.exists() and not p.is_file():  # a named pipe, a device
        raise PatternFileError(f"{p}: not a regular file; give a .mtx or .npz file")
    if not p.is_file():
        raise PatternFileError(f"{p}: no such file")
    name = p.name.lower()  # extensions in any case: A.MTX from a Windows share
    suffix = ".mtx.gz" if name.endswith(".mtx.gz") else p.suffix.lower()
    try:
        if suffix in (".mtx", ".mtx.gz"):
            import scipy.io  # only for files: 30 ms that a first Jacobian should not pay

            rows, cols, _, kind, _, _ = scipy.io.mminfo(p)
            # (scipy's reader of an empty dense "array" file divides by zero: a crash)
            obj: Any = (sp.coo_array((rows, cols)) if kind == "array" and rows * cols == 0
                        else scipy.io.mmread(p))
        elif suffix == ".npz":
            import zipfile

            if not zipfile.is_zipfile(p):  # np.load would call it a pickle (allow_pickle=)
                raise PatternFileError(f"{p}: not a readable matrix (not an .npz archive: "
                                       "save with scipy.sparse.save_npz or numpy.savez)")
            try:
                obj = sp.load_npz(p)
            except (ValueError, KeyError):
                with np.load(p) as z:
                    if len(z.files) != 1:
                        raise PatternFileError(
                            f"{p}: expected a scipy.sparse matrix saved with save_npz or one "
                            f"dense array, found arrays {z.files}"
                        ) from None
                    obj = z[z.files[0]]
        else:
            raise PatternFileError(
                f"{p}: unsupported file type {p.suffix!r}; expected .mtx or .npz"
            )
    except PatternFileError:
        raise
    except Exception as exc:  # malformed content: scipy raises many kinds
        msg = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise PatternFileError(f"{p}: not a readable matrix ({msg})") from exc
    try:
        return as_pattern(obj, name="the matrix")
    except (TypeError, ValueError) as exc:
        raise PatternFileError(f"{p}: {exc}") from exc
    except MemoryError as exc:  # a header declaring a vast shape
        raise PatternFileError(f"{p}: the matrix of shape {getattr(obj, 'shape', '?')} does "
                               "not fit in memory") from exc


def as_pattern(obj: Any, *, name: str = "sparsity") -> SparsityPattern:
    """Convert any accepted sparsity input to a :class:`SparsityPattern`.

    Parameters
    ----------
    obj : SparsityPattern, scipy sparse matrix or array, array_like, str or path-like
        The pattern. Nonzero entries are structural nonzeros; explicit zeros are dropped.
        A string or path names a ``.mtx`` or ``.npz`` file.
    name : str, optional
        Argument name used in error messages.

    Returns
    -------
    SparsityPattern

    Raises
    ------
    TypeError
        ``obj`` is not a matrix (for example ``None``, a string array or an object array).
    ValueError
        ``obj`` is not 2-D or has a zero dimension.

    Examples
    --------
    >>> import scipy.sparse as sp
    >>> from sparsejac.pattern import as_pattern
    >>> as_pattern(sp.diags_array([1.0, 0.0, 1.0]))  # the stored zero is dropped
    SparsityPattern(shape=(3, 3), nnz=2)
    >>> as_pattern([1.0, 2.0])
    Traceback (most recent call last):
        ...
    ValueError: `sparsity` must be 2-D; got an array of shape (2,)
    """
    label = name if " " in name else f"`{name}`"  # (an argument, or a phrase)
    if isinstance(obj, SparsityPattern):
        pattern = obj
    elif isinstance(obj, (str, bytes, os.PathLike)):
        obj = os.fsdecode(obj)
        if not obj:
            raise ValueError(f"{label} is an empty file name; give a .mtx or .npz file")
        pattern = read_pattern_file(obj)
    elif sp.issparse(obj):
        if len(obj.shape) != 2:
            raise ValueError(f"{label} must be 2-D; got a sparse array of shape {obj.shape}")
        _check_indices(obj, name)
        pattern = _from_scipy(obj)
    else:
        if obj is None or isinstance(obj, (dict, set)):
            raise TypeError(
                f"{label} must be a scipy sparse matrix or array, a dense array or a matrix "
                f"file path; got {type(obj).__name__}"
            )
        try:
            a = np.asarray(obj)
        except Exception as exc:
            raise TypeError(
                f"{label} must be a scipy sparse matrix or array, a dense array or a matrix "
                f"file path; got {type(obj).__name__}"
            ) from exc
        if a.dtype.kind not in "biufc":
            raise TypeError(
                f"{label} must hold numbers or booleans; got an array of dtype {a.dtype}"
            )
        if a.ndim != 2:
            raise ValueError(f"{label} must be 2-D; got an array of shape {a.shape}")
        r, c = np.nonzero(a)
        pattern = SparsityPattern(a.shape, r, c)
    m, n = pattern.shape
    if m == 0 or n == 0:
        raise ValueError(
            f"{label} must have at least one row and one column; got shape {pattern.shape}"
        )
    return pattern
