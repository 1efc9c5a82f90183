"""The ``sparsejac`` command line: it parses, calls :mod:`sparsejac.report` and formats.

``sparsejac report`` has one form per input kind, each with its own options (an option of
the other form is an error that names it, never silently ignored):

``sparsejac report [matrix] FILE [--partition P] [--order O] [--seed N] [--effort E]
[--time-budget S] [--json] [--plot FILE.png]``
    Read a Matrix Market (``.mtx``) or scipy ``.npz`` sparsity pattern, colour it, and print
    its shape, nonzero count, density, largest row and column counts, the lower bounds, and
    one line per (partition, order) with the number of colours (forward + reverse passes),
    the gap to the lower bound, the compression ratio and the time. ``auto`` reports the
    partition it picks. An unreadable or malformed file gives a one-line error naming the
    file and exit status 2.

``sparsejac report function MODULE:ATTR (--size N | --x0 FILE.npy) [--order O] [--json]
[--plot FILE.png]`` (also ``sparsejac report --function MODULE:ATTR ...``)
    Trace the numpy function ``ATTR`` of ``MODULE`` (a dotted module name or a ``.py`` path)
    at a point (``--x0``: from a ``.npy`` file; ``--size N``: N values uniform in [0.5, 1.5],
    seed 0, away from the kinks of abs/max/sqrt) and print the detection time, shape,
    nonzeros, lower bounds, the products of forward, reverse and mixed mode, the mode
    ``auto`` picks with its reason and measured cost per Jacobian, and the time of one ``f``.

``--plot FILE.png`` (either form) draws the pattern coloured by colour class; it needs the
optional matplotlib.

``sparsejac warm-up``
    Compile (or load) the compiled kernels of the common paths now (:func:`sparsejac.warm_up`):
    run once after installing, so that no later first use waits for numba.

Also reachable as ``python -m sparsejac``.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn, TextIO

import numpy as np

from sparsejac.coloring import BIDIRECTIONAL_ORDERS, DEFAULT_EFFORT, ORDERS, PARTITIONS
from sparsejac.pattern import PatternFileError, read_pattern_file
from sparsejac.report import function_report, matrix_report, result_key

__all__ = ["build_parser", "load_function", "main"]

PROG = "sparsejac"
#: The options of each form of ``sparsejac report`` (an option of the other form is an error).
MATRIX_ONLY = ("--partition", "--seed", "--effort", "--time-budget")
FUNCTION_ONLY = ("--size", "--x0")


def _add_common(p: argparse.ArgumentParser, orders: Sequence[str],
                default: str = "'best' (default)", every: bool = True) -> None:
    p.add_argument(
        "--order",
        choices=[*orders, *(["all"] if every else []), "best"],
        default=None,
        metavar="{NAME,all,best}" if every else "{NAME,best}",
        help=f"vertex order: one of {', '.join(orders)}; 'all' (each of them, then best) or "
        f"{default}" if every else f"vertex order of the colourings: one of "
        f"{', '.join(orders)}, or {default} (a table of every order: report the pattern as a "
        "matrix file)",
    )
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--plot", metavar="FILE.png",
                   help="draw the pattern coloured by colour class (needs matplotlib)")


class _OneLineParser(argparse.ArgumentParser):
    """A report parser whose usage errors are one line on standard error (exit status 2)."""

    def error(self, message: str) -> NoReturn:
        """Print ``PROG: error: message`` and where the options are listed; exit 2."""
        usage = self.prog.replace("[matrix]", "matrix")
        self.exit(2, f"{self.prog}: error: {message} (usage: {usage} --help)\n")


def _matrix_parser() -> argparse.ArgumentParser:
    p = _OneLineParser(
        prog=f"{PROG} report [matrix]",
        description="Colour the columns (forward mode) and/or rows (reverse mode) of the "
        "sparsity pattern in FILE and report colours, lower bounds, compression and time.",
    )
    p.add_argument("file", metavar="FILE", help="Matrix Market (.mtx) or scipy (.npz) file")
    p.add_argument(
        "--partition",
        choices=[*PARTITIONS, "auto", "all", "symmetric"],
        default="all",
        help="which side to colour: columns, rows, both (bidirectional), the cheapest of "
        "the three (auto), or each of them (all, the default); or, for a structurally "
        "symmetric pattern such as a Hessian's, symmetric colourings (star and acyclic)",
    )
    _add_common(p, list(BIDIRECTIONAL_ORDERS),
                "'best' (the default; 'all' for --partition symmetric)")
    p.add_argument("--seed", type=int, default=0, help="seed of the random orders (default 0)")
    p.add_argument(
        "--effort", type=float, default=DEFAULT_EFFORT, metavar="E",
        help=f"how much order 'best' may search, in work units of about a second on a "
        f"reference machine, the same on every machine (default {DEFAULT_EFFORT:g}); its "
        "natural and DSATUR passes run whatever the budget (but on nearly dense patterns)")
    p.add_argument(
        "--time-budget", type=float, default=None, metavar="SECONDS",
        help="an opt-in wall-clock limit on top of --effort (the result then depends on the "
        "machine)")
    return p


def _function_parser() -> argparse.ArgumentParser:
    p = _OneLineParser(
        prog=f"{PROG} report function",
        description="Trace the numpy function ATTR of MODULE and report its Jacobian: pattern, "
        "products per mode, the mode auto picks, and the time of one Jacobian against f.",
    )
    p.add_argument("function", metavar="MODULE:ATTR",
                   help="the function: a dotted module name or a path to a .py file, a colon, "
                   "and the attribute")
    p.add_argument("--size", type=int, metavar="N",
                   help="evaluate at N values uniform in [0.5, 1.5] (seed 0)")
    p.add_argument("--x0", metavar="FILE.npy", help="the point, read from a .npy file")
    _add_common(p, [o for o in BIDIRECTIONAL_ORDERS if not o.startswith("dense_")],
                every=False)
    return p


def build_parser() -> argparse.ArgumentParser:
    """Build the top-level parser of the ``sparsejac`` command (for ``--help``).

    ``sparsejac report`` dispatches to one parser per input kind (see the module docstring).

    Returns
    -------
    argparse.ArgumentParser

    Examples
    --------
    >>> from sparsejac.cli import build_parser
    >>> build_parser().parse_args(["report", "a.mtx"]).command
    'report'
    """
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Sparse Jacobians of numpy programs: colouring reports for matrix files "
        "and functions.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    rep = sub.add_parser(
        "report",
        help="report the AD passes of a sparsity pattern file or of a function's Jacobian",
        description="Report how many AD passes a Jacobian costs. Two forms, each with its "
        "own options:\n\n"
        f"  {PROG} report [matrix] FILE [--partition P] [--order O] [--seed N] [--effort E]\n"
        "                   [--time-budget S] [--json] [--plot FILE.png]\n"
        f"  {PROG} report function MODULE:ATTR (--size N | --x0 FILE.npy) [--order O]\n"
        "                   [--json] [--plot FILE.png]\n\n"
        f"'{PROG} report matrix --help' and '{PROG} report function --help' list the "
        "options of each.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    rep.add_argument("args", nargs="*", help=argparse.SUPPRESS)
    sub.add_parser(
        "warm-up",
        help="compile the numba kernels of the common paths now (once after installing)",
        description="Compile (or load from numba's cache) the kernels sparsejac's common "
        "paths use, so that no later first use waits for the compiler.",
    )
    return parser


def _split_report_args(rest: list[str]) -> tuple[str, list[str]]:
    """Which form (``matrix`` or ``function``) and its arguments."""
    if rest and rest[0] in ("matrix", "function"):
        return rest[0], rest[1:]
    for i, a in enumerate(rest):
        if a == "--function":  # the --function MODULE:ATTR spelling
            if any(not r.startswith("-") for r in rest[:i]):
                raise ValueError("give either a pattern FILE or --function, not both")
            return "function", rest[:i] + rest[i + 1:]
        if a.startswith("--function="):
            return "function", [*rest[:i], a.split("=", 1)[1], *rest[i + 1:]]
    return "matrix", rest


def _misplaced(kind: str, rest: Sequence[str]) -> str | None:
    """An option of the other form, if one was given."""
    other = MATRIX_ONLY if kind == "function" else FUNCTION_ONLY
    for a in rest:
        name = a.split("=", 1)[0]
        if name in other:
            where = ("matrix files only (sparsejac report FILE)" if kind == "function" else
                     "functions only (sparsejac report function MODULE:ATTR)")
            return f"{name} applies to {where}"
    return None


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
    if "symmetric" in lb:
        print(f"  edges per vertex             -> star and acyclic colouring need >= "
              f"{lb['symmetric']} colours", file=out)
    print(file=out)
    header = ("partition", "order", "colours", "fwd+rev", "bound", "gap", "n/p", "time")
    rows = [
        (
            result_key(r)[0] if r["chosen"] == r["partition"]
            else f"{r['partition']}>{r['chosen']}",
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
    if "symmetric" in lb:
        print("  symmetric:star / :acyclic = Hessian-vector products per Hessian (B = H @ S), "
              "recovered directly / by substitution", file=out)


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
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv == ["warm-up"]:
        return _warm_up()
    if not argv or argv[0] != "report" or any(a in ("-h", "--help") for a in argv[1:2]):
        try:  # the top-level parser: --help, usage errors, `report --help`
            build_parser().parse_args(argv)
        except SystemExit as exc:  # argparse already printed its help or the error
            return int(exc.code) if isinstance(exc.code, int) else 2
    rest = argv[1:]
    if not rest:
        print(f"{PROG} report: error: give a pattern FILE or a function MODULE:ATTR (usage: "
              f"{PROG} report [matrix] FILE ... | {PROG} report function MODULE:ATTR ...)",
              file=sys.stderr)
        return 2
    try:
        kind, rest = _split_report_args(rest)
    except ValueError as exc:
        print(f"{PROG} report: error: {exc}", file=sys.stderr)
        return 2
    bad = _misplaced(kind, rest)
    if bad is not None:
        print(f"{PROG} report {kind}: error: {bad}", file=sys.stderr)
        return 2
    parser = _function_parser() if kind == "function" else _matrix_parser()
    try:
        args = parser.parse_args(rest)
    except SystemExit as exc:
        return int(exc.code) if isinstance(exc.code, int) else 2
    try:
        return _main_function(args) if kind == "function" else _main_matrix(args)
    except BrokenPipeError:  # `sparsejac report ... | head`: the reader has gone
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # no second error when Python flushes stdout
        return 0


def _warm_up() -> int:
    from sparsejac.warmup import warm_up

    print(f"{PROG} warm-up: compiling (or loading) the kernels of the common paths ...",
          flush=True)
    seconds = warm_up()
    print(f"{PROG} warm-up: done in {seconds:.1f} s; later processes load them from numba's "
          "cache")
    return 0


#: what matplotlib's Agg canvas writes (``--plot`` is checked before the report runs)
_IMAGE_FORMATS = ("avif", "eps", "gif", "jpeg", "jpg", "pdf", "pgf", "png", "ps", "raw", "rgba",
                  "svg", "svgz", "tif", "tiff", "webp")


def _plot_refused(path: str | None, err: str) -> bool:
    """Whether ``--plot`` cannot be written, said before the report runs (True: said)."""
    if path is None:
        return False
    reason = None
    if not path.strip():
        reason = "an empty file name"
    elif importlib.util.find_spec("matplotlib") is None:
        from sparsejac.plot import INSTALL_HINT

        reason = f"it needs matplotlib, which is not installed: {INSTALL_HINT}"
    elif Path(path).suffix.lower().lstrip(".") not in _IMAGE_FORMATS:
        reason = ("the name must end in an image format's extension: "
                  f"{', '.join('.' + k for k in _IMAGE_FORMATS)}")
    else:
        folder = Path(path).expanduser().resolve().parent
        if not folder.is_dir() or not os.access(folder, os.W_OK):
            reason = f"no writable directory {str(folder)!r}"
    if reason is not None:
        print(f"{err} `--plot {path}`: {reason}", file=sys.stderr)
    return reason is not None


def _main_matrix(args: argparse.Namespace) -> int:
    if _plot_refused(args.plot, f"{PROG} report: error:"):
        return 2
    try:
        pattern = read_pattern_file(args.file)
    except PatternFileError as exc:
        print(f"{PROG} report: error: {exc}", file=sys.stderr)
        return 2
    partitions = [*PARTITIONS, "auto"] if args.partition == "all" else [args.partition]
    order = args.order or ("all" if args.partition == "symmetric" else "best")
    every = ORDERS if args.partition in ("symmetric", "column", "row") else BIDIRECTIONAL_ORDERS
    orders = [*every, "best"] if order == "all" else [order]
    try:
        rep, found = matrix_report(pattern, partitions, orders, seed=args.seed,
                                   effort=args.effort, time_budget=args.time_budget,
                                   return_colorings=True)
    except (TypeError, ValueError) as exc:  # a negative --time-budget, a non-square pattern
        msg = str(exc).replace("`sparsity`", "pattern")  # (the API's name for the file's)
        print(f"{PROG} report: error: {args.file}: {msg}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps({"file": args.file, **rep}))
    else:
        _print_table(args.file, rep, sys.stdout)
    if args.plot:
        best = min(rep["results"], key=lambda r: r["n_colors"])
        result = found[result_key(best)]
        return _plot(result, args.plot,
                     f"{args.file}: {best['partition']} colouring, {result.n_colors} colours",
                     f"{PROG} report: error:")
    return 0


def _plot(result: Any, path: str, title: str, err: str) -> int:
    from sparsejac.plot import plot_coloring

    try:
        plot_coloring(result, path, title=title)
    except ImportError as exc:
        print(f"{err} {exc}", file=sys.stderr)
        return 2
    except (OSError, ValueError) as exc:  # no such directory, a format matplotlib lacks
        print(f"{err} `--plot`: cannot write {path!r} ({exc})", file=sys.stderr)
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
    ValueError: the function must be MODULE:ATTR; got 'numpy'
    """
    module_name, sep, attr = spec.rpartition(":")
    if not sep or not module_name or not attr:
        raise ValueError(f"the function must be MODULE:ATTR; got {spec!r}")
    try:
        if module_name.endswith(".py"):
            path = Path(module_name)
            if not path.is_file():
                raise ValueError(f"the function: no such file {module_name!r}")
            mod_spec = importlib.util.spec_from_file_location(path.stem, path)
            if mod_spec is None or mod_spec.loader is None:
                raise ValueError(f"the function: cannot import {module_name!r}")
            module = importlib.util.module_from_spec(mod_spec)
            mod_spec.loader.exec_module(module)
        else:
            if str(Path.cwd()) not in sys.path and "" not in sys.path:
                sys.path.insert(0, str(Path.cwd()))
            module = importlib.import_module(module_name)
    except ValueError:
        raise
    except SystemExit as exc:  # script code run on import: sys.exit()
        raise ValueError(f"the function {spec}: importing {module_name!r} exits (SystemExit: "
                         f"{exc.code!r}); guard the module's script code with `if __name__ "
                         "== '__main__':`") from exc
    except Exception as exc:
        raise ValueError(f"the function: cannot import {module_name!r} ({exc})") from exc
    fn = getattr(module, attr, None)
    if fn is None:
        raise ValueError(f"the function: module {module_name!r} has no attribute {attr!r}")
    if not callable(fn):
        raise ValueError(f"the function: {spec!r} is not callable")
    return fn  # type: ignore[no-any-return]


def _load_x0(args: argparse.Namespace) -> np.ndarray:
    if args.x0 is not None:
        try:
            got = np.load(args.x0)
        except Exception as exc:
            raise ValueError(f"`--x0`: cannot read {args.x0!r} as a .npy file ({exc})") from exc
        if not isinstance(got, np.ndarray):  # an .npz archive: several arrays
            got.close()
            raise ValueError(f"`--x0`: {args.x0!r} is an .npz archive; save the point alone "
                             "with numpy.save (a .npy file)")
        return got
    if args.size < 1:
        raise ValueError(f"`--size` must be a positive integer; got {args.size}")
    try:
        return np.asarray(np.random.default_rng(0).uniform(0.5, 1.5, args.size))
    except MemoryError:
        raise ValueError(f"`--size {args.size}`: the point does not fit in memory") from None


def _main_function(args: argparse.Namespace) -> int:
    from sparsejac.errors import ConcretizationError, UnsupportedPrimitiveError

    err = f"{PROG} report function: error:"
    if _plot_refused(args.plot, err):
        return 2
    if (args.size is None) == (args.x0 is None):
        print(f"{err} a function needs exactly one of --size N or --x0 FILE.npy",
              file=sys.stderr)
        return 2
    order = "best" if args.order is None else args.order
    try:
        fn = load_function(args.function)
        x0 = _load_x0(args)
        rep, jac = function_report(fn, x0, order=order, return_jacobian=True)
    except (ConcretizationError, UnsupportedPrimitiveError) as exc:  # (they name the call)
        print(f"{err} {exc}", file=sys.stderr)
        return 2
    except (Exception, SystemExit) as exc:  # ours name the argument; else the function raised
        text = str(exc)
        ours = ((isinstance(exc, (ValueError, TypeError)) and text[:1] == "`")
                or text.startswith("the function") or args.function in text)
        print(f"{err} {text}" if ours else f"{err} {args.function} raised "
              f"{type(exc).__name__}: {text}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps({"function": args.function, **rep}))
    else:
        _print_function(args.function, rep, sys.stdout)
    if args.plot:
        return _plot(jac.coloring, args.plot,
                     f"{args.function}: {jac.mode} mode, {jac.n_products} products", err)
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
    if auto.get("path") == "direct":
        print(f"  auto assembles J directly, no products (its mode {auto['mode']}, "
              f"{rep['colors'][auto['mode']]} products otherwise): {auto['reason']}", file=out)
    else:
        print(f"  auto picks {auto['mode']} ({auto['n_products']} products): {auto['reason']}",
              file=out)
    ratio = auto["seconds"] / max(rep["f_seconds"], 1e-12)
    print(f"  one Jacobian {1e3 * auto['seconds']:.3g} ms, one f {1e3 * rep['f_seconds']:.3g} ms "
          f"(ratio {ratio:.1f}), preparation {rep['preparation_seconds']:.2f} s", file=out)
    hess = rep.get("hessian")
    if hess is None:
        return
    print(file=out)
    if "error" in hess:
        print(f"  Hessian: not available ({hess['error']})", file=out)
        return
    c = hess["colors"]
    print(f"  Hessian        {n} x {n}, {hess['nnz']} nonzeros, symmetric lower bound "
          f"{hess['lower_bound']}", file=out)
    print(f"  colours        star {c['star']}, acyclic {c['acyclic']}, column {c['column']}",
          file=out)
    if hess.get("path") == "direct":
        print(f"  SparseHessian  {hess['reason']}", file=out)
    else:
        print(f"  SparseHessian  {hess['n_products']} Hessian-vector products: "
              f"{hess['reason']}", file=out)
    print(f"  one Hessian {1e3 * hess['seconds']:.3g} ms, preparation "
          f"{hess['preparation_seconds']:.2f} s", file=out)
