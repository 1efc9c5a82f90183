"""The pictures of docs/benchmarks.md, measured by the benchmark scripts' own functions.

Two figures, each with its data saved as JSON next to it (in ``docs/_static``):

* ``coloring_vs_colpack.png`` / ``.json`` -- for every shared matrix
  (``../shared/data/matrices``), the colours (= products per Jacobian) of
  ``order="best"`` for the column, row and bidirectional partitions, ColPack's best over its
  orders, and the lower bound. The numbers are those of the tables of
  ``benchmarks/coloring.py``: its ``bench`` and ``bench_bidirectional`` functions are called
  and their table rows read back.
* ``jacobian_time_vs_n.png`` / ``.json`` -- the time of one Jacobian against n for the 2D
  Brusselator (N = 32 ... 256) and tridiagonal Burgers (n = 10**3 ... 10**6): sparsejac's
  prepared Jacobian, scipy's ``approx_derivative`` with the same column groups, asdex (JAX)
  when it is importable, and one evaluation of ``f`` for scale. Measured by
  ``benchmarks/jacobian.py``'s ``run`` (minimum over interleaved repeats).

Usage (from the repository root)::

    python benchmarks/figures.py                 # measure both, save JSON, draw (minutes)
    python benchmarks/figures.py --only jacobian # one of them
    python benchmarks/figures.py --quick         # small sizes only (a smoke run)
    python benchmarks/figures.py --plot-only     # redraw from the saved JSON

Drawing needs matplotlib (``pip install -e '.[plot]'``). Without it the measurements are
saved and the script says to run ``--plot-only`` where matplotlib is installed; that is also
how the asdex curve is made: measure in an environment with asdex and jax, draw in another.
"""

from __future__ import annotations

import argparse
import datetime
import json
import re
import sys
from pathlib import Path
from typing import Any

import scipy.sparse as sp

REPO = Path(__file__).resolve().parent.parent
STATIC = REPO / "docs" / "_static"
sys.path.insert(0, str(REPO / "benchmarks"))

import coloring as coloring_bench  # noqa: E402  (benchmarks/ is not a package)
import jacobian as jacobian_bench  # noqa: E402

import sparsejac  # noqa: E402
from sparsejac.coloring.graph import bidirectional_lower_bound  # noqa: E402
from sparsejac.pattern import as_pattern  # noqa: E402

COLORING_JSON = STATIC / "coloring_vs_colpack.json"
JACOBIAN_JSON = STATIC / "jacobian_time_vs_n.json"
FAMILIES = ("Brusselator", "Burgers")


# ---------------------------------------------------------------------------------------------
# measuring
# ---------------------------------------------------------------------------------------------


def _int(cell: str, what: str) -> int | None:
    """An integer table cell of coloring.py ("**7**", "101", "-" for none)."""
    if cell.strip() == "-":
        return None
    found = re.match(r"\**(\d+)", cell.strip())
    if found is None:
        raise ValueError(f"benchmarks/coloring.py: cannot read {what} from the cell {cell!r}")
    return int(found.group(1))


def measure_coloring(repeats: int, quick: bool) -> dict[str, Any]:
    """Colours of best, ColPack and the lower bound per shared matrix and partition."""
    coloring_bench.warm_up()
    paths = sorted(coloring_bench.SHARED.glob("*.mtx")) if coloring_bench.SHARED.is_dir() else []
    if quick:  # the three smallest
        paths = sorted(paths, key=lambda p: p.stat().st_size)[:3]
    if not paths:
        raise SystemExit(f"no shared matrices in {coloring_bench.SHARED}: nothing to draw")
    one_sided = coloring_bench.colpack_best()
    bicolour = coloring_bench.colpack_bicoloring()
    k = len(coloring_bench.ORDER_COLUMNS)  # the table: name, part, m×n, nnz, LB, orders, best, ..
    rows = []
    for path in paths:
        pattern = as_pattern(path)
        A = sp.csc_array(pattern.to_csr_array())
        row: dict[str, Any] = {"matrix": path.stem, "shape": list(pattern.shape),
                               "nnz": pattern.nnz}
        for partition in ("column", "row"):
            cells = coloring_bench.bench(path.stem, A, partition,
                                         one_sided.get((path.stem, partition)), repeats)
            row[partition] = {"best": _int(cells[k + 5], "best"),
                              "colpack": _int(cells[k + 7], "ColPack"),
                              "lower_bound": _int(cells[4], "LB")}
        cells, passes = coloring_bench.bench_bidirectional(  # at most 3 runs, as coloring.py
            path.stem, pattern, bicolour.get(path.stem), max(1, min(repeats, 3)))
        ref = bicolour.get(path.stem)
        row["bidirectional"] = {"best": passes, "colpack": None if ref is None else ref[0],
                                "lower_bound": bidirectional_lower_bound(pattern),
                                "cell": cells[8]}
        rows.append(row)
        print(f"  coloring: {path.stem}", file=sys.stderr, flush=True)
    return {"rows": rows}


def measure_jacobian(repeats: int, quick: bool, use_asdex: bool) -> dict[str, Any]:
    """One Jacobian's time against n: sparsejac, scipy FD (same groups), asdex, f."""
    if use_asdex:
        try:
            import asdex  # noqa: F401
            import jax  # noqa: F401
        except ImportError:
            use_asdex = False
            print("asdex/JAX curve skipped: not importable (optional: pip install asdex jax)",
                  file=sys.stderr)
    # compile and load every kernel once, as benchmarks/jacobian.py does
    warm, wx = jacobian_bench.burgers(50)
    sparsejac.SparseJacobian(warm, wx)(wx)
    rows = []
    for name, build, in_quick in jacobian_bench.PROBLEMS:
        if not name.startswith(FAMILIES) or (quick and not in_quick):
            continue
        r = jacobian_bench.run(name, build, repeats, use_asdex)
        rows.append({
            "problem": name, "family": name.split()[0], "n": r["n"], "nnz": r["nnz"],
            "mode": r["mode"], "products": r["colors"], "f_ms": r["f"] * 1e3,
            "jacobian_ms": r["J"] * 1e3, "fd_ms": r["fd"] * 1e3, "fd_groups": r["fd_groups"],
            "fd_estimated": r["fd_estimated"],
            "asdex_ms": None if r["asdex"] is None else r["asdex"] * 1e3,
        })
        print(f"  jacobian: {name}", file=sys.stderr, flush=True)
    return {"rows": rows, "asdex": use_asdex}


def stamp(command: str, machine: str) -> dict[str, str]:
    """Provenance saved with every measurement."""
    return {"command": command, "date": datetime.date.today().isoformat(), "machine": machine}


# ---------------------------------------------------------------------------------------------
# drawing
# ---------------------------------------------------------------------------------------------


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _plain_log_ticks(axis: Any, low: float, high: float) -> None:
    """Readable ticks on a log axis spanning [low, high]: at most about 7, plain numbers."""
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter

    ticks: list[float] = []
    for mantissas in ((1, 2, 3, 5), (1, 2, 5), (1, 3), (1,)):
        ticks = [m * 10.0**e for e in range(-3, 9) for m in mantissas
                 if low <= m * 10.0**e <= high]
        if len(ticks) <= 7:
            break
    axis.set_major_locator(FixedLocator(ticks or [low, high]))
    axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}" if v >= 1 else f"{v:g}"))
    axis.set_minor_formatter(NullFormatter())


def _title(what: str, data: dict[str, Any]) -> str:
    return f"{what}\nmeasured {data['date']} on {data['machine']}"


def plot_coloring(data: dict[str, Any], path: Path) -> None:
    """Three panels (column, row, bidirectional): best, ColPack and the bound per matrix."""
    plt = _pyplot()
    rows = sorted(data["rows"], key=lambda r: r["matrix"].lower(), reverse=True)
    names = [r["matrix"] for r in rows]
    y = list(range(len(rows)))
    fig, axes = plt.subplots(1, 3, figsize=(13, 0.36 * len(rows) + 2.2), sharey=True)
    titles = {"column": "column colouring (forward mode)",
              "row": "row colouring (reverse mode)",
              "bidirectional": "bidirectional (mixed mode: fwd + rev)"}
    for ax, part in zip(axes, titles, strict=True):
        lb = [r[part]["lower_bound"] for r in rows]
        best = [r[part]["best"] for r in rows]
        cp = [(i, r[part]["colpack"]) for i, r in zip(y, rows, strict=True)
              if r[part]["colpack"] is not None]
        ax.barh(y, lb, color="0.85", height=0.6, label="lower bound")
        ax.scatter([c for _, c in cp], [i for i, _ in cp], marker="o", s=60,
                   facecolors="none", edgecolors="tab:blue", linewidths=1.5,
                   label="ColPack (best of its orders)", zorder=3)
        ax.scatter(best, y, marker="x", s=40, color="tab:red", linewidths=1.8,
                   label='sparsejac order="best"', zorder=4)
        one_sided = []
        if part == "bidirectional":  # its lower bound is trivial (<= 2): show one-sided too
            one_sided = [min(r["column"]["best"], r["row"]["best"]) for r in rows]
            ax.scatter(one_sided, y, marker="|", s=120, color="0.3", linewidths=1.5,
                       label="sparsejac's best one-sided colouring", zorder=2)
        ax.set_xscale("log")
        values = [v for v in (*lb, *best, *one_sided, *(c for _, c in cp)) if v]
        ax.set_xlim(min(values) / 1.4, max(values) * 1.4)
        _plain_log_ticks(ax.xaxis, min(values) / 1.4, max(values) * 1.4)
        ax.set_title(titles[part], fontsize=10)
        ax.set_xlabel("colours = products per Jacobian (log)")
        ax.grid(axis="x", which="both", alpha=0.3)
    axes[0].set_yticks(y, names, fontsize=8)
    axes[0].set_ylim(-0.7, len(rows) - 0.3)
    handles, labels = axes[2].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=4, fontsize=8,
               bbox_to_anchor=(0.5, 0.025))
    fig.suptitle(_title("Colours per matrix: sparsejac vs ColPack and the lower bound", data),
                 fontsize=9)
    fig.text(0.5, 0.005, f"command: {data['command']}; lower bounds: largest row (column) count, "
             "largest column (row) count, and 2 for bidirectional colouring (any pattern with "
             "two nonzeros in some row and in some column)", ha="center", fontsize=7,
             color="0.4")
    fig.tight_layout(rect=(0, 0.07, 1, 0.95))
    fig.savefig(path, dpi=100)
    plt.close(fig)


def plot_jacobian(data: dict[str, Any], path: Path) -> None:
    """Two log-log panels (Brusselator, Burgers): time of one Jacobian against n."""
    plt = _pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.4))
    for ax, family in zip(axes, FAMILIES, strict=True):
        rows = sorted((r for r in data["rows"] if r["family"] == family), key=lambda r: r["n"])
        if not rows:
            ax.set_visible(False)
            continue
        n = [r["n"] for r in rows]
        ax.plot(n, [r["fd_ms"] for r in rows], "s-", color="tab:blue",
                label="scipy approx_derivative, same groups (approximate)")
        if any(r["asdex_ms"] is not None for r in rows):
            pts = [(r["n"], r["asdex_ms"]) for r in rows if r["asdex_ms"] is not None]
            ax.plot(*zip(*pts, strict=True), "^-", color="tab:green", label="asdex (JAX, jit)")
        ax.plot(n, [r["jacobian_ms"] for r in rows], "o-", color="tab:red",
                label="sparsejac, prepared")
        ax.plot(n, [r["f_ms"] for r in rows], ":", color="0.4", label="one evaluation of f")
        for r in rows:
            ax.annotate(f"{r['products']}", (r["n"], r["jacobian_ms"]),
                        textcoords="offset points", xytext=(4, -11), fontsize=7,
                        color="tab:red")
        ax.set_xscale("log")
        ax.set_yscale("log")
        _plain_log_ticks(ax.xaxis, min(n) / 1.5, max(n) * 1.5)
        ax.set_xlabel("n (unknowns)")
        ax.set_ylabel("time of one Jacobian [ms]")
        label = "2D Brusselator, n = 2N²" if family == "Brusselator" else \
            "tridiagonal Burgers"
        ax.set_title(label, fontsize=10)
        ax.grid(which="both", alpha=0.3)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=4, fontsize=8,
               bbox_to_anchor=(0.5, 0.04))
    fig.suptitle(_title("Time of one Jacobian against n (red numbers: sparsejac's products "
                        "per Jacobian)", data), fontsize=9)
    fig.text(0.5, 0.005, f"command: {data['command']}; minimum over interleaved repeats",
             ha="center", fontsize=7, color="0.4")
    fig.tight_layout(rect=(0, 0.1, 1, 0.93))
    fig.savefig(path, dpi=100)
    plt.close(fig)


# ---------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=["coloring", "jacobian"], help="one figure only")
    parser.add_argument("--quick", action="store_true", help="small sizes only (smoke run)")
    parser.add_argument("--plot-only", action="store_true", help="redraw from the saved JSON")
    parser.add_argument("--repeats", type=int, default=None,
                        help="timed repeats (default: each script's own default)")
    parser.add_argument("--no-asdex", action="store_true", help="skip the asdex curve")
    args = parser.parse_args(argv)
    wanted = [args.only] if args.only else ["coloring", "jacobian"]
    command = "python benchmarks/figures.py" + "".join(
        f" {a}" for a in (argv if argv is not None else sys.argv[1:]) if a != "--plot-only")
    STATIC.mkdir(exist_ok=True)
    jobs = {"coloring": (COLORING_JSON, plot_coloring), "jacobian": (JACOBIAN_JSON, plot_jacobian)}
    for what in wanted:
        target, _ = jobs[what]
        if args.plot_only:
            continue
        if what == "coloring":
            data = measure_coloring(args.repeats or 5, args.quick)
            machine = coloring_bench.machine()
        else:
            data = measure_jacobian(args.repeats or 20, args.quick, not args.no_asdex)
            machine = jacobian_bench.machine()
        data.update(stamp(command, machine))
        target.write_text(json.dumps(data, indent=1) + "\n")
        print(f"wrote {target.relative_to(REPO)}")
    try:
        _pyplot()
    except ImportError:
        print("matplotlib is not installed: the measurements are saved; draw them with "
              "`python benchmarks/figures.py --plot-only` where it is (pip install -e '.[plot]')")
        return 0
    for what in wanted:
        source, draw = jobs[what]
        if not source.is_file():
            print(f"{source.relative_to(REPO)} is missing: run without --plot-only first")
            return 1
        png = source.with_suffix(".png")
        draw(json.loads(source.read_text()), png)
        print(f"wrote {png.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
