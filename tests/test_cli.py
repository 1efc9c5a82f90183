"""The `sparsejac report` command: table and JSON output, exit codes, one-line errors."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
import scipy.io
import scipy.sparse as sp

from sparsejac.cli import main
from sparsejac.coloring import BIDIRECTIONAL_ORDERS, ORDERS

TRIDIAGONAL = np.eye(6) + np.eye(6, k=1) + np.eye(6, k=-1)


@pytest.fixture
def mtx(tmp_path):
    """A 7×5 pattern file: largest row 3, largest column 4."""
    a = np.zeros((7, 5))
    a[0, :3] = 1
    a[1:5, 4] = 1
    a[5, 1] = a[6, 2] = 1
    path = tmp_path / "small.mtx"
    scipy.io.mmwrite(path, sp.coo_array(a))
    return path


def test_table(mtx, capsys):
    """The default report prints the figures and one line per partition for order best."""
    assert main(["report", str(mtx)]) == 0
    out = capsys.readouterr().out
    assert str(mtx) in out
    assert "7 x 5" in out
    assert "nonzeros       9" in out
    assert "column colouring needs >= 3 colours" in out
    assert "row colouring needs >= 4 colours" in out
    starts = ("column ", "row ", "bidirectional ", "auto>")
    lines = [ln.split() for ln in out.splitlines() if ln.strip().startswith(starts)]
    assert [(ln[0], ln[1].split(":")[0], ln[2], ln[3], ln[4]) for ln in lines] == [
        ("column", "best", "3", "3+0", "3"),
        ("row", "best", "4", "0+4", "4"),
        ("bidirectional", "best", "2", "1+1", "2"),
        ("auto>bidirectional", "auto", "2", "1+1", "2"),
    ]


def test_json(mtx, capsys):
    """--json prints one object with shape, nnz, lower_bound and results."""
    assert main(["report", str(mtx), "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["shape"] == [7, 5]
    assert rep["nnz"] == 9
    assert rep["lower_bound"] == {"column": 3, "row": 4, "bidirectional": 2}
    got = [
        (r["partition"], r["chosen"], r["order"], r["n_forward"], r["n_reverse"], r["n_colors"])
        for r in rep["results"]
    ]
    assert got == [
        ("column", "column", "best", 3, 0, 3),
        ("row", "row", "best", 0, 4, 4),
        ("bidirectional", "bidirectional", "best", 1, 1, 2),
        ("auto", "bidirectional", "best", 1, 1, 2),
    ]
    keys = {"partition", "chosen", "order", "found_by", "n_colors", "n_forward", "n_reverse"}
    for r in rep["results"]:
        assert keys | {"seconds", "gap", "compression", "lower_bound"} <= set(r)
        assert r["seconds"] >= 0


def test_order_all_one_partition(mtx, capsys):
    """--order all reports every named order and best; --partition limits the side."""
    assert main(["report", str(mtx), "--partition", "row", "--order", "all", "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert [r["order"] for r in rep["results"]] == [*ORDERS, "best"]
    assert {r["partition"] for r in rep["results"]} == {"row"}


def test_order_all_bidirectional(mtx, capsys):
    """Bidirectional partitions also report the dense-first orders."""
    argv = ["report", str(mtx), "--partition", "bidirectional", "--order", "all", "--json"]
    assert main(argv) == 0
    rep = json.loads(capsys.readouterr().out)
    assert [r["order"] for r in rep["results"]] == [*BIDIRECTIONAL_ORDERS, "best"]
    assert "dense_rows_first" in BIDIRECTIONAL_ORDERS
    for r in rep["results"]:
        assert r["n_forward"] + r["n_reverse"] == r["n_colors"] >= 2


def test_dense_order_skips_one_sided(mtx, capsys):
    """A bidirectional-only order is skipped for column and row partitions."""
    assert main(["report", str(mtx), "--order", "dense_rows_first", "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert [r["partition"] for r in rep["results"]] == ["bidirectional", "auto"]


def test_single_order(mtx, capsys):
    """A named order reports just that order."""
    assert main(["report", str(mtx), "--order", "dsatur", "--partition", "column"]) == 0
    out = capsys.readouterr().out
    assert " dsatur " in out
    assert "best" not in out


def test_npz_file(tmp_path, capsys):
    """scipy .npz files are read too."""
    path = tmp_path / "tri.npz"
    sp.save_npz(path, sp.csr_array(TRIDIAGONAL))
    assert main(["report", str(path), "--order", "natural", "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert [r["n_colors"] for r in rep["results"]] == [3, 3, 3, 3]


def _bad_files(tmp_path):
    garbage = tmp_path / "garbage.mtx"
    garbage.write_text("this is not a matrix\n")
    truncated = tmp_path / "truncated.mtx"
    truncated.write_text("%%MatrixMarket matrix coordinate real general\n3 3 2\n1 1 1.0\n")
    empty = tmp_path / "empty.mtx"
    scipy.io.mmwrite(empty, sp.coo_array((0, 3)))
    text = tmp_path / "matrix.txt"
    text.write_text("1 0\n0 1\n")
    return {
        "missing": tmp_path / "missing.mtx",
        "directory": tmp_path,
        "garbage": garbage,
        "truncated": truncated,
        "empty": empty,
        "extension": text,
    }


@pytest.mark.parametrize(
    "case", ["missing", "directory", "garbage", "truncated", "empty", "extension"]
)
def test_bad_file(case, tmp_path, capsys):
    """An unreadable or malformed file: exit 2, one line on stderr naming the file, no traceback."""
    path = _bad_files(tmp_path)[case]
    assert main(["report", str(path)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith(f"sparsejac report: error: {path}")
    assert "Traceback" not in captured.err


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["report"],
        ["frobnicate"],
        ["report", "x.mtx", "--order", "fastest"],
        ["report", "x.mtx", "--partition", "both"],
    ],
)
def test_bad_arguments(argv, capsys):
    """Bad arguments exit with 2 and a usage message; a report's on one line (found from
    outside: argparse's usage block before it)."""
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "usage: sparsejac" in err
    if argv[:1] == ["report"]:
        assert len(err.strip().splitlines()) == 1


def test_bad_budget(mtx, capsys):
    """A negative --time-budget is reported on one line with exit 2."""
    assert main(["report", str(mtx), "--time-budget", "-1"]) == 2
    assert "`time_budget` must be a non-negative number" in capsys.readouterr().err


def test_help(capsys):
    """--help exits 0 and documents the report options."""
    assert main(["report", "--help"]) == 0
    out = capsys.readouterr().out
    assert "--partition" in out
    assert "--order" in out
    assert "--json" in out


def test_python_dash_m(mtx):
    """`python -m sparsejac report` runs the same command in a fresh process."""
    proc = subprocess.run(
        [sys.executable, "-m", "sparsejac", "report", str(mtx), "--json", "--order", "natural"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["lower_bound"] == {"column": 3, "row": 4, "bidirectional": 2}


def test_errors_after_the_options_are_one_line_messages(tmp_path, capsys, monkeypatch):
    """An order no asked partition takes, a --plot path that cannot be written, a function
    that raises: one line on stderr and exit 2, not a traceback (or an empty report)."""
    from sparsejac.report import matrix_report

    path = tmp_path / "tri.npz"
    sp.save_npz(path, sp.csr_array(np.eye(6) + np.eye(6, k=1) + np.eye(6, k=-1)))
    assert main(["report", str(path), "--order", "dense_rows_first", "--partition",
                 "column"]) == 2
    assert main(["report", str(path), "--plot", str(tmp_path / "no" / "x.png")]) == 2
    assert main(["report", str(path), "--seed", "-1", "--order", "random"]) == 2
    (tmp_path / "fns.py").write_text("def bad(x):\n    raise RuntimeError('boom')\n")
    monkeypatch.chdir(tmp_path)
    assert main(["report", "function", "fns:bad", "--size", "3"]) == 2
    err = capsys.readouterr().err
    assert "applies to the bidirectional and auto partitions only" in err
    assert "no writable directory" in err  # (said before the report runs)
    assert "`seed` must be" in err
    assert "fns:bad raised RuntimeError: boom" in err
    assert "Traceback" not in err
    rect = tmp_path / "rect.npz"
    sp.save_npz(rect, sp.csr_array(np.ones((2, 3))))
    assert main(["report", str(rect), "--partition", "symmetric"]) == 2
    (tmp_path / "fns2.py").write_text("def good(x):\n    return x[1:] * x[:-1]\n")
    assert main(["report", "function", "fns2:good", "--size", "3", "--plot",
                 str(tmp_path / "no" / "x.png")]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith(f"sparsejac report: error: {rect}: a symmetric colouring")
    assert "`sparsity`" not in err[0]
    assert err[1].startswith("sparsejac report function: error:")
    assert "--plot" in err[1]
    with pytest.raises(ValueError, match="unknown order 'foo'"):
        matrix_report(sp.csr_array(np.eye(3)), ["column"], ["foo"])
    assert len(matrix_report(sp.csr_array(np.eye(3)), "column", "natural")["results"]) == 1


def test_function_report_refuses_no_repeats():
    from sparsejac.report import function_report

    for repeats in (0, -1, 1.5):
        with pytest.raises(ValueError, match="`repeats`"):
            function_report(lambda x: x[1:] * x[:-1], np.ones(4), repeats=repeats)


def test_found_from_outside_file_and_plot_errors_are_one_line(tmp_path, capsys):
    """An empty dense Matrix Market file crashed scipy's reader (a floating-point signal); a
    pipe, /dev/null and an empty name were "no such file"; --plot "" was ignored and a bad
    --plot path was found only after the report was printed."""
    import os

    empty = tmp_path / "empty.mtx"
    empty.write_text("%%MatrixMarket matrix array real general\n0 3\n")
    assert main(["report", str(empty)]) == 2
    fifo = tmp_path / "pipe.mtx"
    os.mkfifo(fifo)
    assert main(["report", str(fifo)]) == 2
    assert main(["report", "/dev/null"]) == 2
    assert main(["report", ""]) == 2
    good = tmp_path / "tri.npz"
    sp.save_npz(good, sp.csr_array(np.eye(5) + np.eye(5, k=1)))
    for plot in ("", str(tmp_path / "out.xyz"), str(tmp_path / "none" / "out.png")):
        assert main(["report", str(good), "--plot", plot, "--json"]) == 2
    out, err = capsys.readouterr()
    assert out == ""  # nothing printed before the plot's error
    assert "at least one row and one column; got shape (0, 3)" in err
    assert err.count("not a regular file") == 2
    assert "an empty file name" in err
    assert "`--plot `: an empty file name" in err
    assert "must end in an image format's extension" in err
    assert "no writable directory" in err
    assert "Traceback" not in err
