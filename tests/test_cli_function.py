"""`sparsejac report --function`: JSON fields, the table, plots, and clear errors."""

from __future__ import annotations

import importlib.util
import json

import numpy as np
import pytest

from sparsejac.cli import load_function, main


def test_json_fields(capsys):
    """--json prints the pattern figures, the colours per mode and auto's choice."""
    assert main(["report", "--function", "tests.cli_functions:tridiagonal", "--size", "40",
                 "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["function"] == "tests.cli_functions:tridiagonal"
    assert rep["shape"] == [40, 40]
    assert rep["nnz"] == 40 * 3 - 2
    assert rep["lower_bound"] == {"column": 3, "row": 3}
    assert rep["colors"]["forward"] == 3
    assert rep["colors"]["reverse"] == 3
    assert rep["auto"]["mode"] in rep["colors"]
    assert rep["auto"]["n_products"] == rep["colors"][rep["auto"]["mode"]]
    assert rep["auto"]["seconds"] > 0
    assert rep["f_seconds"] > 0
    assert rep["detection_seconds"] >= 0


def test_dense_row_picks_reverse_side(capsys):
    """A dense row makes forward mode need n products; auto picks a mode with few."""
    assert main(["report", "--function", "tests.cli_functions:dense_row", "--size", "200",
                 "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["colors"]["forward"] == 200
    assert rep["auto"]["mode"] in ("reverse", "mixed")
    assert rep["auto"]["n_products"] <= 4


def test_table_and_x0_file(tmp_path, capsys):
    """The table names the function, the modes and auto's choice; --x0 reads a .npy file."""
    path = tmp_path / "x0.npy"
    np.save(path, np.linspace(1.0, 2.0, 12))
    assert main(["report", "--function", "tests.cli_functions:tridiagonal", "--x0",
                 str(path)]) == 0
    out = capsys.readouterr().out
    assert "tests.cli_functions:tridiagonal" in out
    assert "12 x 12, 34 nonzeros" in out
    assert "auto picks" in out
    assert "forward" in out
    assert "reverse" in out


def test_python_file_path(tmp_path, capsys):
    """MODULE may be a path to a .py file."""
    src = tmp_path / "model.py"
    src.write_text("def f(x):\n    return x[1:] - x[:-1]\n")
    assert main(["report", "--function", f"{src}:f", "--size", "5", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["nnz"] == 8


@pytest.mark.skipif(importlib.util.find_spec("matplotlib") is None,
                    reason="matplotlib is an optional extra and is not installed")
def test_plot(tmp_path, capsys):
    """--plot writes a PNG picture of the coloured pattern."""
    out = tmp_path / "pattern.png"
    assert main(["report", "--function", "tests.cli_functions:tridiagonal", "--size", "30",
                 "--plot", str(out)]) == 0
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_plot_without_matplotlib(tmp_path, capsys, monkeypatch):
    """Without matplotlib, --plot fails with a message saying how to install it."""
    import builtins

    real_import = builtins.__import__

    def fake_import(name, *args, **kwargs):
        if name.startswith("matplotlib"):
            raise ImportError("No module named 'matplotlib'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", fake_import)
    assert main(["report", "--function", "tests.cli_functions:tridiagonal", "--size", "10",
                 "--plot", str(tmp_path / "p.png")]) == 2
    assert "pip install 'sparsejac-numpy[plot]'" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--function", "tests.cli_functions:tridiagonal"], "exactly one of --size"),
        (["--function", "tests.cli_functions:tridiagonal", "--size", "3", "--x0", "a.npy"],
         "exactly one of --size"),
        (["--function", "tests.cli_functions", "--size", "3"], "must be MODULE:ATTR"),
        (["--function", "tests.no_such_module:f", "--size", "3"], "cannot import"),
        (["--function", "tests.cli_functions:missing", "--size", "3"], "has no attribute"),
        (["--function", "tests.cli_functions:not_callable", "--size", "3"], "is not callable"),
        (["--function", "tests.cli_functions:tridiagonal", "--size", "0"], "`--size` must be"),
        (["--function", "tests.cli_functions:tridiagonal", "--x0", "missing.npy"],
         "cannot read 'missing.npy'"),
        (["--function", "tests.cli_functions:branches", "--size", "4"], "local=True"),
        (["some.mtx", "--function", "tests.cli_functions:tridiagonal", "--size", "3"],
         "not both"),
        (["some.mtx", "--size", "3"], "--size applies to functions only"),
        (["--function", "tests.cli_functions:tridiagonal", "--size", "3", "--partition", "row"],
         "--partition applies to matrix files only"),
        (["function", "tests.cli_functions:tridiagonal", "--size", "3", "--seed", "1"],
         "--seed applies to matrix files only"),
        (["function", "tests.cli_functions:tridiagonal", "--size", "3", "--effort=1"],
         "--effort applies to matrix files only"),
        (["some.mtx", "--x0", "a.npy"], "--x0 applies to functions only"),
    ],
)
def test_errors(argv, message, capsys):
    """Bad --function use gives a one-line error naming the problem, exit 2, no traceback."""
    assert main(["report", *argv]) == 2
    err = capsys.readouterr().err
    assert message in err
    assert "Traceback" not in err


def test_load_function_dotted():
    """load_function resolves a dotted module and attribute."""
    assert load_function("tests.cli_functions:tridiagonal").__name__ == "tridiagonal"


def test_scalar_function_reports_its_hessian(capsys: pytest.CaptureFixture[str]) -> None:
    """A scalar function's report has the Hessian's colourings (star, acyclic, column)."""
    assert main(["report", "function", "tests.cli_functions:arrowhead_energy",
                 "--size", "40"]) == 0
    out = capsys.readouterr().out
    assert "Hessian        40 x 40, 118 nonzeros" in out
    assert "star 2," in out
    assert "column 40" in out
    assert "assembled directly" in out or "2 Hessian-vector products" in out


def test_hessian_in_the_json_report() -> None:
    import sparsejac
    from sparsejac.report import function_report
    from tests.cli_functions import arrowhead_energy

    rep = function_report(arrowhead_energy, np.ones(12), repeats=1)
    want = sparsejac.hessian(arrowhead_energy, np.ones(12))
    assert rep["hessian"]["nnz"] == want.nnz
    assert rep["hessian"]["colors"]["star"] == 2
    assert rep["hessian"]["colors"]["acyclic"] <= 2
    assert "hessian" not in function_report(lambda x: x ** 2, np.ones(3), repeats=1)


def test_found_from_outside_function_errors_name_the_function(tmp_path, monkeypatch, capsys):
    """A function raising SystemExit (or a module calling sys.exit on import) ended the report
    silently; a ValueError raised by the function was printed without naming it; an .npz
    --x0 and a --size too large for memory got foreign messages; the direct path's report
    said "forward (0 products)" beside a table of 50."""
    (tmp_path / "fns_outside.py").write_text(
        "import numpy as np\n"
        "def leave(x):\n    raise SystemExit(0)\n"
        "def own(x):\n    raise ValueError('my own message')\n"
        "def outer(x):\n    return np.outer(x, x)\n")
    (tmp_path / "exits_outside.py").write_text("import sys\nsys.exit(0)\ndef f(x):\n    return x\n")
    np.savez(tmp_path / "x.npz", a=np.ones(3))
    monkeypatch.chdir(tmp_path)
    assert main(["report", "function", "fns_outside:leave", "--size", "3"]) == 2
    assert main(["report", "function", "exits_outside:f", "--size", "3"]) == 2
    assert main(["report", "function", "fns_outside:own", "--size", "3"]) == 2
    assert main(["report", "function", "fns_outside:own", "--x0", "x.npz"]) == 2
    assert main(["report", "function", "fns_outside:own", "--size", str(10 ** 12)]) == 2
    assert main(["report", "function", "fns_outside:outer", "--size", "3", "--order", "all"]) == 2
    err = capsys.readouterr().err
    assert "fns_outside:leave raised SystemExit: 0" in err
    assert "the function exits_outside:f: importing 'exits_outside' exits" in err
    assert "fns_outside:own raised ValueError: my own message" in err
    assert "is an .npz archive; save the point alone with numpy.save" in err
    assert "the point does not fit in memory" in err
    assert "invalid choice: 'all'" in err
    assert main(["report", "function", "fns_outside:outer", "--size", "40", "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["auto"]["path"] == "direct"
    assert rep["auto"]["n_products"] == 0
    assert main(["report", "function", "fns_outside:outer", "--size", "40"]) == 0
    assert "auto assembles J directly, no products" in capsys.readouterr().out
