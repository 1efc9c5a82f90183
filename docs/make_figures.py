"""Regenerate the pictures of the documentation (needs matplotlib: pip install '.[plot]').

Run ``python docs/make_figures.py``; the PNG files land in ``docs/_static``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

import sparsejac
from sparsejac.plot import plot_coloring

STATIC = Path(__file__).resolve().parent / "_static"


def brusselator(n: int):
    """The periodic 2-D Brusselator right-hand side on an n × n grid (pattern only)."""

    def f(y):
        u = y.reshape(n, n, 2)
        uu, vv = u[..., 0], u[..., 1]

        def lap(z):
            return np.roll(z, 1, 0) + np.roll(z, -1, 0) + np.roll(z, 1, 1) + np.roll(z, -1, 1) - 4 * z

        du = lap(uu) + 1.0 + uu * uu * vv - 4.4 * uu
        dv = lap(vv) + 3.4 * uu - uu * uu * vv
        return np.stack([du, dv], -1).ravel()

    return f


def main() -> None:
    """Write every figure."""
    STATIC.mkdir(exist_ok=True)
    n = 8
    pattern = sparsejac.jacobian_sparsity(brusselator(n), np.ones(2 * n * n))
    c = sparsejac.color(pattern, "column")
    plot_coloring(c, STATIC / "brusselator_coloring.png",
                  title=f"2-D Brusselator, {n}x{n} grid: {c.n_colors} colours for "
                  f"{pattern.shape[1]} columns")
    hessian_figure()


def arrowhead_energy(x):
    """``x_0`` scales every other term: its row and column of the Hessian are dense."""
    return x[0] * np.sum(x[1:] ** 2) + np.sum(np.sin(x))


def hessian_figure() -> None:
    """The star colouring of an arrowhead Hessian."""
    n = 12
    pattern = sparsejac.hessian_sparsity(arrowhead_energy, np.ones(n))
    star = sparsejac.color(pattern, "symmetric", method="star")
    column = sparsejac.color(pattern, "column")
    plot_coloring(star, STATIC / "hessian_star_coloring.png",
                  title=f"Arrowhead Hessian: {star.n_colors} star colours, "
                  f"{column.n_colors} column colours")


if __name__ == "__main__":
    main()
