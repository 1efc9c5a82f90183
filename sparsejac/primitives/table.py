"""The page of supported numpy functions, generated from the registry.

``python -m sparsejac.primitives.table`` writes ``docs/supported.md``; a test checks that the
committed page equals :func:`markdown_table`, so the page never drifts from the code. Each
registered entry becomes a row ``| function | via | note |`` in its family's table; the page
ends with the functions that are deliberately *not* supported, why, and what to write instead.
"""

from __future__ import annotations

import sys
from pathlib import Path

from sparsejac.primitives import supported_entries

__all__ = ["FAMILIES", "NOT_SUPPORTED", "markdown_table", "write"]

#: Family order and the sentence that introduces each table.
FAMILIES: dict[str, str] = {
    "elementwise": "Ufuncs and elementwise functions (broadcasting included). Rows marked "
                   "*zero derivative* carry no dependencies (comparisons, `floor`, ...).",
    "movement": "Data movement: one gather mechanism (the numpy call applied to integer "
                "position arrays) serves every function here.",
    "indexing": "Scatter-add and in-place stores (`x[key]` and `out[key] = v` are handled by "
                "the operators, see above).",
    "reductions": "Reductions and scans along any axis, with `keepdims`.",
    "linalg": "Contractions (normalised to one einsum), constant `scipy.sparse` operands, "
              "norms, and dense linear algebra with traced operands (solve, factorisations, "
              "decompositions), `scipy.linalg` solves and `scipy.sparse.linalg` solves with a "
              "constant matrix, and the linear filters of `scipy.ndimage`/`scipy.signal` with "
              "constant kernels (a constant sparse matrix of the stencil's footprint). "
              "Derivatives where they exist: eigen- and singular vectors at "
              "distinct values (NaN where they coincide), pinv and lstsq at locally constant "
              "rank.",
    "sorting": "Value-dependent selections (`sort`, `partition`, running extrema, and the "
               "quantiles built on them): the global pattern is dense along the sorted axis, "
               "a local pattern (`local=True`) is the selection at x, and prepared Jacobians "
               "recompute the selection at every point.",
    "complex": "Complex intermediates with real x and real outputs: a complex value is a pair "
               "of real traced arrays (real, imaginary part); `+ - * /`, `conj`, `exp`, `abs`, "
               "`square`, `sin`, `cos`, `sinh`, `cosh`, integer powers, `np.dot`, `==` and `!=` "
               "(both parts), real-linear functions (`sum`, "
               "`reshape`, `roll`, ...) and the functions below act on the pair, so abs, "
               "conj and angle (not holomorphic) are exact. Other operations on a complex "
               "value, and a complex result of f, raise.",
    "creation": "Array creation from a traced array, and queries.",
    "stats": "`scipy.stats` distributions: the methods of scipy's generic classes, traced for "
             "the distributions listed (frozen or not).",
}

#: (functions, why they are not supported, what to write instead)
NOT_SUPPORTED: list[tuple[str, str, str]] = [
    ("`np.unique`; `np.quantile`/`np.percentile` methods other than "
     "`linear`, `lower`, `higher`, `nearest`, `midpoint`; indexing with `np.argsort(x)` or "
     "`np.argpartition(x, k)` other than `np.take_along_axis(x, np.argsort(x, axis), axis)` "
     "(global mode)",
     "the result is a value-dependent permutation or selection of x",
     "if the order does not depend on x, compute the permutation outside `f` and index with "
     "it; otherwise pass the sparsity yourself and use finite differences"),
    ("`np.nonzero`, `np.flatnonzero`, `np.argwhere`, `np.extract`, one-argument "
     "`np.where(cond)`, `x[traced_mask]` (global mode)",
     "the output's size depends on the values",
     "keep the shape with `np.where(cond, a, b)`, or ask for a local pattern "
     "(`local=True`)"),
    ("`np.linalg.eig`, `eigvals` (non-symmetric), `tensorsolve`, `tensorinv`; `scipy.linalg` "
     "functions other than `solve`, `lu_solve`, `cho_solve`, `expm`, `inv`, `det` "
     "(`lu_factor`, `cholesky`, `solve_triangular`, ... of a traced matrix; `inv` of a "
     "triangular or diagonal one); `scipy.sparse.linalg` iterative solvers and a traced "
     "sparse matrix",
     "complex eigenvalues; no rules yet for the others",
     "`np.linalg.eigh` for a symmetric matrix; the `np.linalg` function of the same name "
     "(`np.linalg.cholesky` takes traced matrices); `scipy.linalg.solve(a, b, "
     "assume_a='lower triangular')`; `spsolve` for a sparse system"),
    ("`lu.solve(u)` with a `scipy.sparse.linalg.splu` factorisation (or `factorized(A)`) made "
     "before `f` is traced",
     "the factorisation's `solve` is compiled code that converts its argument; numpy gives no "
     "hook into it",
     "call `splu(A)` (or `factorized(A)`, `spsolve(A, b)`) inside `f`: a constant A is "
     "factorised once, when `f` is traced, and prepared Jacobians reuse the factors"),
    ("derivatives with respect to an order or a distribution parameter without a closed form: "
     "`iv`/`ive`/`jv`/`kv`'s `v`, `yn`'s `n`, `polygamma`'s `n`, `gammainc`/`gammaincc`'s "
     "`a`, `betainc`/`betaincc`'s `a`, `b`, `stdtr`'s `df`, `zeta`'s `x`; "
     "`scipy.stats` `gamma`'s `a`, `beta`'s `a`, `b`, `t`'s `df` in `cdf`/`sf`",
     "refused with an error naming the function and the argument",
     "keep the argument a constant (or a parameter `t`), or use mode='fd' with `sparsity=`"),
    ("`scipy.stats` distributions other than `norm`, `t`, `gamma`, `beta`, `lognorm`, "
     "`expon`, `poisson`; `ppf`, `isf`, `entropy`",
     "no rules yet (the error names the distribution and method)",
     "write the density with `scipy.special` functions (`gammaln`, `xlogy`, `betainc`)"),
    ("complex `x`, complex outputs of `f`; on a complex intermediate: ufuncs other than "
     "`+ - * /`, `conj`, `exp`, `abs`, `square` (`np.sin(1j * x)`, `np.sqrt`, `**`), "
     "`.astype(complex)`, `np.real_if_close` of a traced imaginary part; `np.fft` `s=`, "
     "`rfft2`, `hfft`",
     "no rule yet: the call raises, naming it (dropping an imaginary part would give a wrong "
     "Jacobian)",
     "return `.real` and `.imag` (or `np.abs`) as separate real outputs; write `sin(a + ib)` "
     "with `exp`, `cos`, `sin` of the real parts"),
    ("`ufunc.reduceat` other than `np.add.reduceat`, `ufunc.outer`, `accumulate` of ufuncs "
     "other than `add`, `multiply`, `maximum`, `minimum`, `ufunc.at` other than `np.add.at` / "
     "`np.subtract.at`",
     "no rule yet", "use `np.add.reduce` over reshaped slices, `np.outer`, or a loop over "
     "a few slices"),
    ("`np.modf`, `np.frexp`, the ufunc `np.divmod`", "ufuncs with two outputs",
     "use `//` and `%` (or `np.floor_divide` and `np.remainder`)"),
    ("`where=` and `initial=` in reductions other than `np.sum(where=)` and `np.max`/`np.min`/"
     "`np.nanmax`/`np.nanmin`, and in ufuncs",
     "no rule yet",
     "`np.sum(np.where(mask, x, 0))`"),
    ("`np.pad` modes `mean`, `median`, `maximum`, `minimum`, `linear_ramp`, callables",
     "value-dependent or not yet mapped to positions", "build the border with slices"),
    ("`np.interp` with `period=`", "no rule yet", "wrap `x` into the period by hand"),
    ("`np.frompyfunc`, `np.vectorize` with `signature=`/`excluded=`, `np.piecewise` with "
     "non-elementwise functions", "Python callbacks per element",
     "write the body with array operations (`np.vectorize` and `np.apply_along_axis` of a "
     "traceable function are supported, at one traced call per element/lane)"),
    ("`scipy.special` ufuncs other than those listed above (`dawsn`, `hyp2f1`, `kve`, ...) and "
     "Python functions other than `logsumexp`, `softmax`, `log_softmax`, `polygamma`, `zeta`, "
     "`multigammaln` (`comb`, ...); `scipy.signal`/`scipy.ndimage` functions other than "
     "the linear filters and convolutions listed, `scipy.integrate`",
     "no rules yet for those ufuncs (the error names them); the Python functions convert "
     "their input with `np.asarray` (the error names them)",
     "`np.tanh`-style elementary functions, `np.convolve`, slicing, or a constant "
     "`scipy.sparse` matrix built outside `f`"),
    ("`np.asarray(x)` of a traced array without `like=`, `np.array([...], dtype=float)`, "
     "`float(y)`, `y.item()`, storing into a plain array made outside f (a global buffer)",
     "numpy gives no hook: the "
     "value would lose its dependence on x (`TracedConversionError`); `np.array([a, b])` of "
     "traced *scalars* does work",
     "drop `np.asarray`; create arrays inside f (`np.zeros(n)` there is traced) or with "
     "`np.zeros_like(x)`; `np.stack([...])` or `np.array([...], like=x)`"),
]

_HEADER = """\
# Supported numpy functions

<!-- Generated by `python -m sparsejac.primitives.table` from the primitive registry;
     do not edit by hand (tests/primitives/test_table.py checks it). -->

sparsejac traces `f` by running it on a stand-in for `x` that records every numpy call. The
functions below have pattern, forward (JVP) and reverse (VJP) rules; any other numpy function
raises `UnsupportedPrimitiveError` naming it (sparsejac never guesses). *via* is the primitive
the call is recorded as (*composite*: written with other supported calls); *note* states
restrictions.

**Operators and methods.** `+ - * / // % **` and their reflected and in-place forms (so
`2 ** x` and `1 - x`), unary `-`, `abs()`, comparisons, `@`, `x[key]` (basic, negative,
strided, integer-array and constant boolean-mask indexing, `x[i, j]` pairs), `out[key] = v`
on arrays made inside `f` (`np.zeros(n)` & co) or from `x`, `.T`, `.mT`, `.reshape`,
`.ravel`, `.flatten`, `.transpose`,
`.swapaxes`, `.squeeze`, `.repeat`, `.take`, `.diagonal`, `.sum`, `.prod`, `.mean`, `.max`,
`.min`, `.std`, `.var`, `.trace`, `.cumsum`, `.cumprod`, `.all`, `.any`, `.argmax`,
`.argmin`, `.dot`, `.clip`, `.round`, `.copy`, `.astype`, `.fill` (other ndarray methods
forward to the numpy function of the same name, supported or not as it is), and `L @ u`,
`L.dot(u)`, `u @ L` for a constant `scipy.sparse` matrix or array `L` (`L * u` too for the
`spmatrix` classes).

**Index arguments** (index arrays, masks, shifts, `np.add.at` indices, `bincount` bins) must
be constants in global mode; local mode (`local=True`) reads them at `x`. See
[patterns.md](patterns.md).

**scipy functions.** scipy's ufuncs (`scipy.special.erf`, `iv`, ...) reach the tracer as
numpy's do. The scipy functions below that are Python code converting their inputs with
`np.asarray` (`scipy.linalg.solve`, `scipy.special.logsumexp`, the `scipy.stats` methods, ...)
are traced by interception while a trace runs, also when imported by name before the trace
(`from scipy.special import logsumexp`); calls without traced arguments, and calls from other
threads, run scipy's own code
([internals](internals.md#library-functions-that-convert-their-input)).
"""


def _cell(text: str) -> str:
    return text.replace("|", "\\|") if text else ""


def markdown_table() -> str:
    """Return the text of ``docs/supported.md``: a table per family, then the unsupported list.

    Returns
    -------
    str
        Markdown, ending with a newline.

    Examples
    --------
    >>> text = markdown_table()
    >>> text.splitlines()[0]
    '# Supported numpy functions'
    >>> "| `numpy.roll` | gather |  |" in text
    True
    >>> "## Not supported" in text
    True
    """
    entries = supported_entries()
    by_family: dict[str, list[str]] = {f: [] for f in FAMILIES}
    for e in entries:
        by_family.setdefault(e.family, []).append(
            f"| `{e.name}` | {_cell(e.via)} | {_cell(e.note)} |")
    out = [_HEADER]
    total = sum(len(rows) for rows in by_family.values())
    out.append(f"{total} registered entries in {len(by_family)} families.\n")
    for family, rows in by_family.items():
        out.append(f"## {family} ({len(rows)})\n")
        intro = FAMILIES.get(family)
        if intro:
            out.append(f"{intro}\n")
        out.append("| function | via | note |")
        out.append("|---|---|---|")
        out.extend(rows)
        out.append("")
    out.append("## Not supported\n")
    out.append("Deliberately absent, with the reason and what to write instead.\n")
    out.append("| functions | why | instead |")
    out.append("|---|---|---|")
    out.extend(f"| {_cell(a)} | {_cell(b)} | {_cell(c)} |" for a, b, c in NOT_SUPPORTED)
    return "\n".join(out) + "\n"


def write(path: str | Path = "docs/supported.md") -> Path:
    """Write :func:`markdown_table` to ``path`` (default: ``docs/supported.md``).

    Parameters
    ----------
    path : str or Path
        Target file; its directory is created if needed.

    Returns
    -------
    Path
        The file written.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     target = write(Path(tmp) / "supported.md")
    ...     target.read_text(encoding="utf-8") == markdown_table()
    True
    """
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(markdown_table(), encoding="utf-8")
    return p


if __name__ == "__main__":  # pragma: no cover - exercised by `python -m`
    target = write(sys.argv[1] if len(sys.argv) > 1 else "docs/supported.md")
    print(f"wrote {target}")
