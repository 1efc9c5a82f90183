"""Pictures of coloured sparsity patterns (needs the optional matplotlib extra).

matplotlib is imported when a picture is asked for, never at ``import sparsejac``; without it
:func:`plot_coloring` raises an ImportError that says how to install it.
"""

from __future__ import annotations

import os

import numpy as np

from sparsejac.coloring import ColoringResult

__all__ = ["nonzero_colors", "plot_coloring"]

INSTALL_HINT = "pip install 'sparsejac-numpy[plot]' (or pip install matplotlib)"


def nonzero_colors(result: ColoringResult) -> np.ndarray:
    """The colour class of every nonzero (CSR order) under a colouring.

    Column colourings colour a nonzero by its column's group, row colourings by its row's
    group; in a bidirectional colouring a nonzero takes its column's group when the column
    is seeded (forward colours ``0..p-1``), else ``p +`` its row's group.

    Examples
    --------
    >>> import numpy as np
    >>> import sparsejac
    >>> from sparsejac.plot import nonzero_colors
    >>> r = sparsejac.color(np.eye(3) + np.eye(3, k=1), "column", order="natural")
    >>> nonzero_colors(r).tolist()
    [0, 1, 1, 0, 0]
    """
    pat = result.pattern
    cg = result.column_groups
    rg = result.row_groups
    if result.partition == "column" and cg is not None:
        return np.asarray(cg[pat.indices])
    if result.partition == "row" and rg is not None:
        return np.asarray(rg[pat.rows])
    p = int(cg.max()) + 1 if cg is not None and cg.size and cg.max() >= 0 else 0
    col = cg[pat.indices] if cg is not None else np.full(pat.nnz, -1)
    row = rg[pat.rows] if rg is not None else np.full(pat.nnz, -1)
    return np.where(col >= 0, col, p + row)


def plot_coloring(result: ColoringResult, path: str | os.PathLike[str], *,
                  title: str | None = None) -> None:
    """Draw the pattern with every nonzero coloured by its colour class, into an image file.

    Parameters
    ----------
    result : ColoringResult
        The colouring to draw.
    path : str or path-like
        Output file (format from the extension, e.g. ``.png``).
    title : str, optional
        Figure title (default: partition and number of colours).

    Raises
    ------
    ImportError
        matplotlib is not installed (the message says how to install it).
    TypeError, ValueError
        ``result`` is not a :class:`~sparsejac.ColoringResult`, or ``path`` does not name a
        file of an image format matplotlib writes.

    Examples
    --------
    >>> import os, tempfile
    >>> import numpy as np
    >>> import sparsejac
    >>> from sparsejac.plot import plot_coloring
    >>> r = sparsejac.color(np.eye(6) + np.eye(6, k=1), "column", order="natural")
    >>> path = os.path.join(tempfile.mkdtemp(), "coloring.png")
    >>> try:
    ...     plot_coloring(r, path, title="bidiagonal: 2 colours")
    ...     drawn = os.path.getsize(path) > 0
    ... except ImportError:  # matplotlib is optional: pip install 'sparsejac-numpy[plot]'
    ...     drawn = True
    >>> drawn
    True
    """
    if not isinstance(result, ColoringResult):
        raise TypeError("`result` must be a ColoringResult (from sparsejac.color); got "
                        f"{type(result).__name__}")
    if not isinstance(path, (str, os.PathLike)) or isinstance(os.fspath(path), bytes):
        raise TypeError(f"`path` must be a file name (str or path-like); got {path!r:.80}")
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise ImportError(f"drawing a pattern needs matplotlib: {INSTALL_HINT}") from exc
    suffix = os.path.splitext(os.fspath(path))[1].lower().lstrip(".")
    formats = plt.figure().canvas.get_supported_filetypes()
    plt.close("all")
    if suffix not in formats:
        raise ValueError(f"`path` {os.fspath(path)!r} must end in an image format's extension: "
                         f"{', '.join('.' + k for k in sorted(formats))}")
    pat = result.pattern
    m, n = pat.shape
    colors = nonzero_colors(result)
    fig, ax = plt.subplots(figsize=(6, 6 * min(max(m / max(n, 1), 0.3), 3)))
    size = max(0.5, min(30.0, 20000.0 / max(pat.nnz, 1)))
    ax.scatter(pat.indices, pat.rows, c=colors, s=size, marker="s", cmap="tab20",
               linewidths=0)
    ax.set_xlim(-0.5, n - 0.5)
    ax.set_ylim(m - 0.5, -0.5)
    ax.set_aspect("equal" if 0.2 < m / max(n, 1) < 5 else "auto")
    ax.set_xlabel("column (input)")
    ax.set_ylabel("row (output)")
    ax.set_title(title or f"{result.partition} colouring: {result.n_colors} colours, "
                 f"nnz = {pat.nnz:,}")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
