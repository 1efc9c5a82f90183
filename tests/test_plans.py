"""Saved plans: ``SparseJacobian.save`` and ``sparsejac.load``.

Oracles: the original prepared Jacobian (bit-identical values), hand-derived Jacobians, and
the refusals for another function, another file and a changed pattern.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import sparsejac

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples"))
import brusselator_bdf


def rhs_with_t(y: Any, t: Any, k: float) -> Any:
    return -k * y ** 2 + np.sin(t) * np.roll(y, 1)


@pytest.mark.parametrize("mode", ["auto", "forward", "reverse", "mixed", "fd"])
def test_load_gives_the_same_jacobian_without_colouring(mode: str, tmp_path: Path) -> None:
    rhs, y0 = brusselator_bdf.make_problem(8)

    def f(y: Any) -> Any:
        return rhs(0.0, y)

    jac = sparsejac.SparseJacobian(f, y0, mode=mode,
                                   sparsity=None if mode != "fd" else
                                   sparsejac.jacobian_sparsity(f, y0))
    path = tmp_path / "plan.npz"
    jac.save(path)
    again = sparsejac.load(path, f)
    assert again.mode == jac.mode
    assert again.stats()["coloring_work"] == 0.0
    assert again.coloring.n_colors == jac.coloring.n_colors
    y = y0 * 1.1
    np.testing.assert_array_equal(again(y).toarray(), jac(y).toarray())


def test_params_and_args_round_trip(tmp_path: Path) -> None:
    y0 = np.linspace(0.5, 1.5, 7)
    jac = sparsejac.SparseJacobian(rhs_with_t, y0, params=(0.3,), args=(2.0,))
    jac.save(tmp_path / "ode")  # numpy adds .npz
    again = sparsejac.load(tmp_path / "ode.npz", rhs_with_t, args=(2.0,))
    for t in (0.3, 1.2):
        want = np.diag(-4.0 * y0) + np.sin(t) * np.roll(np.eye(7), 1, axis=0)
        np.testing.assert_allclose(again.evaluate(y0, params=(t,)).toarray(), want,
                                   rtol=1e-14, atol=1e-14)


def test_another_function_or_file_is_refused(tmp_path: Path) -> None:
    f = lambda x: x[1:] ** 2 - x[:-1]  # noqa: E731
    path = tmp_path / "plan.npz"
    sparsejac.SparseJacobian(f, np.ones(5)).save(path)
    with pytest.raises(ValueError, match="does not give the saved plan's value"):
        sparsejac.load(path, lambda x: x[1:] ** 3 - x[:-1] + 1.0)
    # the same value at x0 but a coupling outside the saved pattern
    with pytest.raises(ValueError, match=r"saved plan's pattern misses 3 entries"):
        sparsejac.load(path, lambda x: x[1:] ** 2 - x[:-1] + 0.0 * x[0] ** 2 * x[4])
    np.savez(tmp_path / "other.npz", a=np.ones(3))
    with pytest.raises(ValueError, match="is not a saved sparsejac plan"):
        sparsejac.load(tmp_path / "other.npz", f)
    with pytest.raises(ValueError, match="is not a saved sparsejac plan"):
        sparsejac.load(tmp_path / "missing.npz", f)
