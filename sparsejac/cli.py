"""The ``sparsejac`` command line; it only formats what the coloring and api modules return.

Subcommands:

``sparsejac report --function MODULE:ATTR (--size N | --x0 FILE.npy) [--json] [--plot FILE.png]``
    Trace the numpy function ``ATTR`` of ``MODULE`` (a dotted module name or a ``.py`` path)
    at a point (``--x0``: from a ``.npy`` file; ``--size N``: N values uniform in [0.5, 1.5],
    seed 0, away from the kinks of abs/max/sqrt) and print the detection time, shape,
    nonzeros, lower bounds, the products of forward, reverse and mixed mode, the mode
    ``auto`` picks with its reason and measured cost per Jacobian, and the time of one ``f``.

``--plot FILE.png`` (either form) draws the pattern coloured by colour class; it needs the
optional matplotlib.

``sparsejac report FILE [--partition column|row|bidirectional|auto|all] [--order NAME|all|best]
[--json]``
    Read a Matrix Market (``.mtx``) or scipy ``.npz`` sparsity pattern, colour it, and print
    its shape, nonzero count, density, largest row and column counts, the lower bounds, and
    one line per (partition, order) with the number of colours (forward + reverse passes),
    the gap to the lower bound, the compression ratio and the time. ``auto`` reports the
    partition it picks. ``--json`` prints the same as one JSON object. An unreadable or
    malformed file gives a one-line error naming the file and exit status 2.

Also reachable as ``python -m sparsejac``.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TextIO

import numpy as np

from sparsejac.coloring import (
    BIDIRECTIONAL_ORDERS,
    ORDERS,
    PARTITIONS,
    color,
    color_partitions,
    warm_up,
)
from sparsejac.coloring.budget import DEFAULT_EFFORT
from sparsejac.coloring.graph import bidirectional_lower_bound
from sparsejac.pattern import PatternFileError, SparsityPattern, read_pattern_file

__all__ = ["build_parser", "load_function", "main", "report"]

PROG = "sparsejac"
TWO_SIDED = ("bidirectional", "auto")


def build_parser() -> argparse.ArgumentParser:
    """Build the argument parser of the ``sparsejac`` command.

    Returns
    -------
    argparse.ArgumentParser

    Examples
    --------
    >>> from sparsejac.cli import build_parser
    >>> args = build_parser().parse_args(["report", "a.mtx", "--partition", "row"])
    >>> args.command, args.file, args.partition, args.order
    ('report', 'a.mtx', 'row', 'best')
    """
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Sparse Jacobians of numpy programs: colouring reports for matrix files.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    rep = sub.add_parser(
        "report",
        help="colour a sparsity pattern file and report the number of AD passes",
        description=(
            "Colour the columns (forward mode) and/or rows (reverse mode) of the sparsity "
            "pattern in FILE and report colours, lower bounds, compression and time."
        ),
    )
    rep.add_argument("file", metavar="FILE", nargs="?",
                     help="Matrix Market (.mtx) or scipy (.npz) file (or use --function)")
    rep.add_argument("--function", metavar="MODULE:ATTR",
                     help="report on the Jacobian of the numpy function ATTR of MODULE (a "
                     "dotted module name or a path to a .py file)")
    rep.add_argument("--size", type=int, metavar="N",
                     help="with --function: evaluate at N values uniform in [0.5, 1.5] (seed 0)")
    rep.add_argument("--x0", metavar="FILE.npy",
                     help="with --function: the point, read from a .npy file")
    rep.add_argument("--plot", metavar="FILE.png",
                     help="draw the pattern coloured by colour class (needs matplotlib)")
    rep.add_argument(
        "--partition",
        choices=[*PARTITIONS, "auto", "all"],
        default="all",
        help="which side to colour: columns, rows, both (bidirectional), the cheapest of "
        "the three (auto), or each of them (all, the default)",
    )
    rep.add_argument(
        "--order",
        choices=[*BIDIRECTIONAL_ORDERS, "all", "best"],
        default="best",
        metavar="{NAME,all,best}",
        help=f"vertex order: one of {', '.join(BIDIRECTIONAL_ORDERS)} (the last two for "
        "bidirectional and auto only); 'all' (each of them, then best) or 'best' (default)",
    )
    rep.add_argument("--json", action="store_true", help="print one JSON object")
    rep.add_argument("--seed", type=int, default=0, help="seed of the random orders (default 0)")
    rep.add_argument(
        "--effort",
        type=float,
        default=DEFAULT_EFFORT,
        metavar="E",
        help=f"how much order 'best' may search, in work units of about a second on a reference "
        f"machine, the same on every machine (default {DEFAULT_EFFORT:g}); its natural and "
        "DSATUR passes always run",
    )
    rep.add_argument(
        "--time-budget",
        type=float,
        default=None,
        metavar="SECONDS",
        help="an opt-in wall-clock limit on top of --effort (the result then depends on the "
        "machine)",
    )
    return parser


def report(
    pattern: SparsityPattern,
    partitions: Sequence[str],
    orders: Sequence[str],
    *,
    seed: int = 0,
    effort: float = DEFAULT_EFFORT,
    time_budget: float | None = None,
) -> dict[str, Any]:
    """Colour ``pattern`` for every (partition, order) and collect the report's figures.

    Parameters
    ----------
    pattern : SparsityPattern
        The pattern.
    partitions : sequence of str
        Any of ``"column"``, ``"row"``, ``"bidirectional"`` and ``"auto"``.
    orders : sequence of str
        Names in :data:`~sparsejac.coloring.BIDIRECTIONAL_ORDERS` and/or ``"best"``; a
        column or row partition skips the orders that are for bidirectional ones only.
    seed : int, optional
        Seed of the random orders.
    effort, time_budget : float, optional
        Effort (and the opt-in wall-clock limit) of ``"best"``.

    Returns
    -------
    dict
        ``shape``, ``nnz``, ``density``, ``max_row_count``, ``max_col_count``,
        ``lower_bound`` (``{"column": .., "row": .., "bidirectional": ..}``) and
        ``results``: one dict per (partition, order) with ``partition`` and ``order`` (as
        requested), ``chosen`` (the result's partition: what ``auto`` picked),
        ``found_by`` (the result's ``order``, e.g. ``"best:dsatur"``), ``n_colors``,
        ``n_forward``, ``n_reverse``, ``lower_bound``, ``gap``, ``compression`` and
        ``seconds``.

    Examples
    --------
    >>> import numpy as np
    >>> from sparsejac.pattern import as_pattern
    >>> from sparsejac.cli import report
    >>> rep = report(as_pattern(np.eye(3) + np.eye(3, k=1)), ["column"], ["natural"])
    >>> rep["lower_bound"], [(r["order"], r["n_colors"]) for r in rep["results"]]
    ({'column': 2, 'row': 2, 'bidirectional': 2}, [('natural', 2)])
    """
    warm_up()  # so that the first timing does not include loading compiled kernels
    m, n = pattern.shape
    row_counts, col_counts = pattern.row_counts, pattern.col_counts
    max_row = int(row_counts.max()) if m else 0
    max_col = int(col_counts.max()) if n else 0
    found: dict[tuple[str, str], Any] = {}
    for order in orders:
        # bidirectional and auto share the one-sided searches: colour them together
        parts = [
            p
            for p in partitions
            if order == "best" or order in (BIDIRECTIONAL_ORDERS if p in TWO_SIDED else ORDERS)
        ]
        if parts:
            got = color_partitions(pattern, parts, order, seed=seed, effort=effort,
                                   time_budget=time_budget)
            found.update(((p, order), r) for p, r in got.items())
    results = []
    for partition in partitions:
        for order in orders:
            if (partition, order) not in found:
                continue  # dense_rows_first and dense_columns_first: bidirectional only
            r = found[(partition, order)]
            s = r.stats()
            results.append(
                {
                    "partition": partition,
                    "order": order,
                    "chosen": r.partition,
                    "found_by": r.order,
                    "n_colors": r.n_colors,
                    "n_forward": r.n_forward,
                    "n_reverse": r.n_reverse,
                    "lower_bound": r.lower_bound,
                    "gap": s["gap"],
                    "compression": s["compression"],
                    "seconds": r.seconds,
                }
            )
    return {
        "shape": [m, n],
        "nnz": pattern.nnz,
        "density": pattern.density,
        "max_row_count": max_row,
        "max_col_count": max_col,
        "lower_bound": {
            "column": max(1, max_row),
            "row": max(1, max_col),
            "bidirectional": bidirectional_lower_bound(pattern),
        },
        "results": results,
    }


def _print_table(file: str, rep: dict[str, Any], out: TextIO) -> None:
    m, n = rep["shape"]
    lb = rep["lower_bound"]
    print(f"{file}", file=out)
    print(f"  shape          {m} x {n}", file=out)
    print(f"  nonzeros       {rep['nnz']}  (density {100 * rep['density']:.3g}%)", file=out)
    print(
        f"  largest row    {rep['max_row_count']} nonzeros  -> column colouring needs >= "
        f"{lb['column']} colours",
        file=out,
    )
    print(
        f"  largest column {rep['max_col_count']} nonzeros  -> row colouring needs >= "
        f"{lb['row']} colours",
        file=out,
    )
    print(file=out)
    header = ("partition", "order", "colours", "fwd+rev", "bound", "gap", "n/p", "time")
    rows = [
        (
            r["partition"] if r["chosen"] == r["partition"] else f"{r['partition']}>{r['chosen']}",
            r["found_by"],
            str(r["n_colors"]),
            f"{r['n_forward']}+{r['n_reverse']}",
            str(r["lower_bound"]),
            str(r["gap"]),
            f"{r['compression']:.1f}",
            f"{r['seconds']:.3f} s",
        )
        for r in rep["results"]
    ]
    widths = [max(len(h), *(len(row[i]) for row in rows)) for i, h in enumerate(header)]
    left = {0, 1}

    def line(cells: Sequence[str]) -> str:
        return "  " + "  ".join(
            c.ljust(w) if i in left else c.rjust(w)
            for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        )

    print(line(header), file=out)
    print("  " + "  ".join("-" * w for w in widths), file=out)
    for row in rows:
        print(line(row), file=out)
    print(file=out)
    print(
        "  colours = AD passes per Jacobian (fwd+rev: forward and reverse); auto>X = auto "
        "picked X; n/p = passes saved (vertices per colour)",
        file=out,
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``sparsejac`` command; return the exit status.

    Parameters
    ----------
    argv : sequence of str, optional
        Arguments without the program name; ``sys.argv[1:]`` by default.

    Returns
    -------
    int
        0 on success, 2 for a bad file or bad arguments.

    Examples
    --------
    >>> import os, tempfile, numpy as np, scipy.io, scipy.sparse as sp
    >>> from sparsejac.cli import main
    >>> path = os.path.join(tempfile.mkdtemp(), "tri.mtx")
    >>> scipy.io.mmwrite(path, sp.coo_array(np.eye(5) + np.eye(5, k=1) + np.eye(5, k=-1)))
    >>> main(["report", path, "--order", "natural", "--json"])  # doctest: +ELLIPSIS
    {"file": ..., "shape": [5, 5], "nnz": 13, ...
    0
    >>> main(["report", "missing.mtx"])
    2
    """
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse already printed usage and the error
        return int(exc.code) if isinstance(exc.code, int) else 2
    if args.function is not None:
        return _main_function(args)
    if args.file is None:
        parser.print_usage(sys.stderr)
        print(f"{PROG} report: error: give a pattern FILE or --function MODULE:ATTR",
              file=sys.stderr)
        return 2
    if args.size is not None or args.x0 is not None:
        print(f"{PROG} report: error: --size and --x0 go with --function", file=sys.stderr)
        return 2
    try:
        pattern = read_pattern_file(args.file)
    except PatternFileError as exc:
        print(f"{PROG} report: error: {exc}", file=sys.stderr)
        return 2
    partitions = [*PARTITIONS, "auto"] if args.partition == "all" else [args.partition]
    orders = [*BIDIRECTIONAL_ORDERS, "best"] if args.order == "all" else [args.order]
    try:
        rep = report(pattern, partitions, orders, seed=args.seed, effort=args.effort,
                     time_budget=args.time_budget)
    except (TypeError, ValueError) as exc:  # e.g. a negative --time-budget
        print(f"{PROG} report: error: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps({"file": args.file, **rep}))
    else:
        _print_table(args.file, rep, sys.stdout)
    if args.plot:
        best = min(rep["results"], key=lambda r: r["n_colors"])
        result = color(pattern, best["partition"], best["order"], seed=args.seed,
                       effort=args.effort, time_budget=args.time_budget)
        return _plot(result, args.plot,
                     f"{args.file}: {best['partition']} colouring, {result.n_colors} colours")
    return 0


def _plot(result: Any, path: str, title: str) -> int:
    from sparsejac.plot import plot_coloring

    try:
        plot_coloring(result, path, title=title)
    except ImportError as exc:
        print(f"{PROG} report: error: {exc}", file=sys.stderr)
        return 2
    return 0


def load_function(spec: str) -> Callable[..., Any]:
    """The callable named by ``MODULE:ATTR`` (a dotted module name or a ``.py`` path).

    Parameters
    ----------
    spec : str
        ``package.module:function`` or ``path/to/file.py:function``.

    Returns
    -------
    callable

    Raises
    ------
    ValueError
        The spec is malformed, the module cannot be imported, or ATTR is missing or not
        callable (the message says which).

    Examples
    --------
    >>> from sparsejac.cli import load_function
    >>> load_function("numpy:sin").__name__
    'sin'
    >>> load_function("numpy")
    Traceback (most recent call last):
        ...
    ValueError: `--function` must be MODULE:ATTR; got 'numpy'
    """
    module_name, sep, attr = spec.rpartition(":")
    if not sep or not module_name or not attr:
        raise ValueError(f"`--function` must be MODULE:ATTR; got {spec!r}")
    try:
        if module_name.endswith(".py"):
            path = Path(module_name)
            if not path.is_file():
                raise ValueError(f"`--function`: no such file {module_name!r}")
            mod_spec = importlib.util.spec_from_file_location(path.stem, path)
            if mod_spec is None or mod_spec.loader is None:
                raise ValueError(f"`--function`: cannot import {module_name!r}")
            module = importlib.util.module_from_spec(mod_spec)
            mod_spec.loader.exec_module(module)
        else:
            if str(Path.cwd()) not in sys.path and "" not in sys.path:
                sys.path.insert(0, str(Path.cwd()))
            module = importlib.import_module(module_name)
    except ValueError:
        raise
    except Exception as exc:
        raise ValueError(f"`--function`: cannot import {module_name!r} ({exc})") from exc
    fn = getattr(module, attr, None)
    if fn is None:
        raise ValueError(f"`--function`: module {module_name!r} has no attribute {attr!r}")
    if not callable(fn):
        raise ValueError(f"`--function`: {spec!r} is not callable")
    return fn  # type: ignore[no-any-return]


def _load_x0(args: argparse.Namespace) -> np.ndarray:
    if args.x0 is not None:
        try:
            return np.asarray(np.load(args.x0))
        except Exception as exc:
            raise ValueError(f"`--x0`: cannot read {args.x0!r} as a .npy file ({exc})") from exc
    if args.size < 1:
        raise ValueError(f"`--size` must be a positive integer; got {args.size}")
    return np.asarray(np.random.default_rng(0).uniform(0.5, 1.5, args.size))


def _main_function(args: argparse.Namespace) -> int:
    from sparsejac.api import jacobian_report
    from sparsejac.errors import ConcretizationError, UnsupportedPrimitiveError

    err = f"{PROG} report: error:"
    if args.file is not None:
        print(f"{err} give either FILE or --function, not both", file=sys.stderr)
        return 2
    if (args.size is None) == (args.x0 is None):
        print(f"{err} --function needs exactly one of --size N or --x0 FILE.npy",
              file=sys.stderr)
        return 2
    order = "best" if args.order == "all" else args.order
    try:
        fn = load_function(args.function)
        x0 = _load_x0(args)
        rep, jac = jacobian_report(fn, x0, order=order, return_jacobian=True)
    except (ValueError, TypeError, ConcretizationError, UnsupportedPrimitiveError) as exc:
        print(f"{err} {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps({"function": args.function, **rep}))
    else:
        _print_function(args.function, rep, sys.stdout)
    if args.plot:
        return _plot(jac.coloring, args.plot,
                     f"{args.function}: {jac.mode} mode, {jac.n_products} products")
    return 0


def _print_function(name: str, rep: dict[str, Any], out: TextIO) -> None:
    m, n = rep["shape"]
    lb = rep["lower_bound"]
    auto = rep["auto"]
    print(name, file=out)
    print(f"  Jacobian       {m} x {n}, {rep['nnz']} nonzeros "
          f"(density {100 * rep['density']:.3g}%)", file=out)
    print(f"  detection      {rep['detection_seconds']:.3f} s", file=out)
    print(f"  colouring      {rep['coloring_seconds']:.3f} s", file=out)
    print(f"  lower bounds   column {lb['column']}, row {lb['row']}", file=out)
    print(file=out)
    print("  mode      products", file=out)
    print("  --------  --------", file=out)
    for mode, k in rep["colors"].items():
        print(f"  {mode:<8}  {k:>8}", file=out)
    print(file=out)
    print(f"  auto picks {auto['mode']} ({auto['n_products']} products): {auto['reason']}",
          file=out)
    ratio = auto["seconds"] / max(rep["f_seconds"], 1e-12)
    print(f"  one Jacobian {1e3 * auto['seconds']:.3g} ms, one f {1e3 * rep['f_seconds']:.3g} ms "
          f"(ratio {ratio:.1f}), preparation {rep['preparation_seconds']:.2f} s", file=out)
