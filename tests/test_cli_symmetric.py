"""`sparsejac report FILE --partition symmetric`: star and acyclic colourings of Hessians."""

from __future__ import annotations

import json

import numpy as np
import pytest
import scipy.io
import scipy.sparse as sp

import sparsejac
from sparsejac.cli import main
from sparsejac.coloring import ORDERS
from sparsejac.report import matrix_report, result_key


def arrowhead(n: int) -> np.ndarray:
    a = np.eye(n)
    a[0, :] = a[:, 0] = 1
    return a


@pytest.fixture
def arrow_mtx(tmp_path):
    """A 9×9 arrowhead: 9 colours for columns, 2 for symmetric colourings."""
    path = tmp_path / "arrow.mtx"
    scipy.io.mmwrite(path, sp.coo_array(arrowhead(9)), symmetry="symmetric")
    return path


def test_json_every_order_both_methods(arrow_mtx, capsys):
    """Default order for symmetric is 'all': every order and best, for star and acyclic."""
    assert main(["report", str(arrow_mtx), "--partition", "symmetric", "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["lower_bound"]["column"] == 9
    assert rep["lower_bound"]["symmetric"] == 2
    got = [(r["partition"], r["method"], r["order"], r["n_colors"]) for r in rep["results"]]
    want = [("symmetric", m, o, 2) for m in ("star", "acyclic") for o in (*ORDERS, "best")]
    assert got == want
    assert all(r["n_forward"] == 2 and r["n_reverse"] == 0 for r in rep["results"])


def test_table_and_one_order(arrow_mtx, capsys):
    """The table names the method and prints both lower bounds; --order limits the orders."""
    assert main(["report", str(arrow_mtx), "--partition", "symmetric", "--order",
                 "natural"]) == 0
    out = capsys.readouterr().out
    assert "column colouring needs >= 9 colours" in out
    assert "star and acyclic colouring need >= 2 colours" in out
    assert out.count("symmetric:star") == 2  # the line, and the footnote
    assert "symmetric:acyclic  natural" in out
    assert "best" not in out


def test_not_symmetric_is_an_error(tmp_path, capsys):
    """A pattern that is not structurally symmetric: one line, exit status 2."""
    path = tmp_path / "upper.mtx"
    scipy.io.mmwrite(path, sp.coo_array(np.eye(4) + np.eye(4, k=1)))
    assert main(["report", str(path), "--partition", "symmetric"]) == 2
    err = capsys.readouterr().err
    assert "structurally symmetric" in err
    assert "(0, 1)" in err


def test_matrix_report_colorings_match_color():
    """The colourings returned are those of sparsejac.color, keyed by result_key."""
    H = arrowhead(7) + np.eye(7, k=1) + np.eye(7, k=-1)
    rep, found = matrix_report(H, ["symmetric", "column"], ["natural", "best"],
                               return_colorings=True)
    for row in rep["results"]:
        r = found[result_key(row)]
        assert r.n_colors == row["n_colors"]
        if row["partition"] == "symmetric":
            same = sparsejac.color(H, "symmetric", row["order"], method=row["method"])
            assert np.array_equal(same.groups, r.groups)
            assert r.method == row["method"]
