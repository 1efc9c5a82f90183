"""Bundle adjustment with least_squares: sparsejac's exact Jacobian vs finite differences.

A synthetic version of the scipy cookbook's "Large-scale bundle adjustment in scipy": cameras
(rotation vector, translation, focal length and two radial distortion coefficients: 9
parameters each) look at 3-D points; every observation is the pixel position of one point in
one camera. The residuals are the reprojection errors, written in plain numpy with fancy
indexing over the observation arrays (``camera_params[camera_indices]``,
``points_3d[point_indices]``) and the cookbook's projection model.

Two spellings of the same residuals are timed:

* ``residuals``: a rotation matrix per camera (Rodrigues' formula on the 9-parameter camera
  array), gathered per observation and applied with a sum of products;
* ``residuals_cookbook``: the cookbook's ``rotate``, Rodrigues' formula evaluated per
  observation (its ``np.cross`` spelled with columns).

Each observation touches one camera (9 columns) and one point (3 columns), so the Jacobian
is very sparse, and since two cameras (or two points) never meet in a row, 12 colours cover
it. The fit runs twice, with ``residuals``:

1. ``jac=sparsejac.least_squares_jacobian(fun, x0, args=...)``: exact Jacobians;
2. ``jac_sparsity=`` (the cookbook's hand-built pattern): scipy's compressed finite differences.

It prints the time of one Jacobian each way (minimum of repeats) against scipy's
``approx_derivative`` with the same pattern, grouped two ways: as
``least_squares(jac_sparsity=...)`` groups it (scipy's ``group_columns``: what the second fit
pays per Jacobian) and with sparsejac's own column colouring (fewer groups: scipy at its
best); then the final costs and the agreement of the two fits (parameters are defined up to
a similarity transform, so the fits are compared by their reprojections).

    python examples/bundle_adjustment.py
    SPARSEJAC_EXAMPLE_SMALL=1 python examples/bundle_adjustment.py   # a tiny problem
"""

from __future__ import annotations

import os
import time

import numpy as np
import scipy.sparse as sp
from scipy.optimize import least_squares
from scipy.optimize._numdiff import approx_derivative, group_columns

import sparsejac


def rotation_matrices(rot_vecs):
    """Rotation matrices (k, 3, 3) of rotation vectors (k, 3), by Rodrigues' formula."""
    theta = np.sqrt(np.sum(rot_vecs**2, axis=1))
    v = rot_vecs / theta[:, None]
    x, y, z = v[:, 0], v[:, 1], v[:, 2]
    c, s = np.cos(theta), np.sin(theta)
    k = 1 - c
    r = np.stack([c + k * x * x, k * x * y - s * z, k * x * z + s * y,
                  k * y * x + s * z, c + k * y * y, k * y * z - s * x,
                  k * z * x - s * y, k * z * y + s * x, c + k * z * z], axis=1)
    return r.reshape(-1, 3, 3)


def distort(p, camera_params):
    """Perspective division, radial distortion and focal length (the cookbook's model)."""
    p = -p[:, :2] / p[:, 2:3]
    f, k1, k2 = camera_params[:, 6], camera_params[:, 7], camera_params[:, 8]
    n = np.sum(p**2, axis=1)
    r = 1 + k1 * n + k2 * n**2
    return p * (r * f)[:, None]


def residuals(params, n_cameras, n_points, camera_indices, point_indices, points_2d):
    """Reprojection errors, 2 per observation (rotation matrices built per camera)."""
    camera_params = params[: n_cameras * 9].reshape((n_cameras, 9))
    points_3d = params[n_cameras * 9:].reshape((n_points, 3))
    cams = camera_params[camera_indices]
    rot = rotation_matrices(camera_params[:, :3])[camera_indices]
    p = np.sum(rot * points_3d[point_indices][:, None, :], axis=2) + cams[:, 3:6]
    return (distort(p, cams) - points_2d).ravel()


def rotate(points, rot_vecs):
    """The cookbook's ``rotate``: each point by its own rotation vector (Rodrigues)."""
    theta = np.sqrt(np.sum(rot_vecs**2, axis=1, keepdims=True))
    v = rot_vecs / theta
    dot = np.sum(points * v, axis=1, keepdims=True)
    vx, vy, vz = v[:, 0], v[:, 1], v[:, 2]
    px, py, pz = points[:, 0], points[:, 1], points[:, 2]
    cross = np.stack([vy * pz - vz * py, vz * px - vx * pz, vx * py - vy * px], axis=1)
    cos, sin = np.cos(theta), np.sin(theta)
    return cos * points + sin * cross + dot * (1 - cos) * v


def residuals_cookbook(params, n_cameras, n_points, camera_indices, point_indices, points_2d):
    """Reprojection errors as the cookbook writes them (Rodrigues per observation)."""
    camera_params = params[: n_cameras * 9].reshape((n_cameras, 9))
    points_3d = params[n_cameras * 9:].reshape((n_points, 3))
    cams = camera_params[camera_indices]
    p = rotate(points_3d[point_indices], cams[:, :3]) + cams[:, 3:6]
    return (distort(p, cams) - points_2d).ravel()


def cookbook_sparsity(n_cameras, n_points, camera_indices, point_indices):
    """The hand-built pattern of the cookbook's ``bundle_adjustment_sparsity``."""
    m = camera_indices.size * 2
    n = n_cameras * 9 + n_points * 3
    a = sp.lil_array((m, n), dtype=int)
    i = np.arange(camera_indices.size)
    for s in range(9):
        a[2 * i, camera_indices * 9 + s] = 1
        a[2 * i + 1, camera_indices * 9 + s] = 1
    for s in range(3):
        a[2 * i, n_cameras * 9 + point_indices * 3 + s] = 1
        a[2 * i + 1, n_cameras * 9 + point_indices * 3 + s] = 1
    return a.tocsr()


def synthetic_problem(n_cameras, n_points, views_per_point, seed=0):
    """Cameras around a cloud of points, noisy observations and a perturbed initial guess."""
    rng = np.random.default_rng(seed)
    points = rng.uniform(-1.0, 1.0, size=(n_points, 3))
    cameras = np.empty((n_cameras, 9))
    cameras[:, :3] = rng.normal(scale=0.15, size=(n_cameras, 3))  # rotation vectors
    cameras[:, 3:5] = rng.normal(scale=0.5, size=(n_cameras, 2))
    cameras[:, 5] = -rng.uniform(8.0, 12.0, size=n_cameras)  # in front: camera looks down -z
    cameras[:, 6] = rng.uniform(700.0, 900.0, size=n_cameras)  # focal length (pixels)
    cameras[:, 7] = rng.normal(scale=1e-2, size=n_cameras)  # radial distortion
    cameras[:, 8] = rng.normal(scale=1e-3, size=n_cameras)
    camera_indices = np.concatenate(
        [rng.choice(n_cameras, size=views_per_point, replace=False) for _ in range(n_points)])
    point_indices = np.repeat(np.arange(n_points), views_per_point)
    truth = np.concatenate([cameras.ravel(), points.ravel()])
    points_2d = distort(rotate(points[point_indices], cameras[camera_indices, :3])
                        + cameras[camera_indices, 3:6], cameras[camera_indices])
    points_2d += rng.normal(scale=0.5, size=points_2d.shape)  # half-pixel noise
    x0 = truth.copy()
    x0[: n_cameras * 9] += np.concatenate(
        [rng.normal(scale=s, size=n_cameras) for s in (1e-2, 1e-2, 1e-2, 5e-2, 5e-2, 5e-2,
                                                       5.0, 1e-3, 1e-4)]
    ).reshape(9, n_cameras).T.ravel()
    x0[n_cameras * 9:] += rng.normal(scale=2e-2, size=n_points * 3)
    args = (n_cameras, n_points, camera_indices, point_indices, points_2d)
    return x0, args


def best_time(fn, repeats):
    """Minimum wall time of ``repeats`` calls of ``fn``."""
    best = np.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def time_one_jacobian(fun, x0, args, pattern, repeats):
    """(f, sparsejac, scipy) times in seconds, the prepared Jacobian and scipy's groups."""
    jac = sparsejac.least_squares_jacobian(fun, x0, args=args)
    groups = jac.coloring.column_groups if jac.mode == "forward" else \
        sparsejac.color(pattern, "column").column_groups

    structure = sp.csc_matrix(pattern)  # what least_squares hands to approx_derivative
    scipy_groups = group_columns(structure)  # what least_squares(jac_sparsity=...) colours

    def scipy_fd():
        return approx_derivative(fun, x0, args=args, sparsity=(structure, groups))

    def scipy_own():
        return approx_derivative(fun, x0, args=args, sparsity=(structure, scipy_groups))

    # interleaved, minimum kept: the machine may be shared
    best = [np.inf] * 4
    for _ in range(repeats):
        for i, fn in enumerate((lambda: fun(x0, *args), lambda: jac(x0, *args), scipy_fd,
                                scipy_own)):
            best[i] = min(best[i], best_time(fn, 1))
    t_f, t_ours, t_fd, t_own = best
    err = np.abs(sp.csr_array(scipy_fd()) - jac(x0, *args)).max()
    return (t_f, t_ours, t_fd, t_own), jac, (groups, scipy_groups), err


def main(n_cameras, n_points, views_per_point, repeats):
    x0, args = synthetic_problem(n_cameras, n_points, views_per_point)
    n_cameras, n_points, camera_indices, point_indices, points_2d = args
    pattern = cookbook_sparsity(n_cameras, n_points, camera_indices, point_indices)
    m, n = pattern.shape
    print(f"bundle adjustment: {n_cameras} cameras, {n_points:,} points, "
          f"{camera_indices.size:,} observations -> Jacobian {m:,} x {n:,}, "
          f"{pattern.nnz:,} nonzeros")

    t0 = time.perf_counter()
    jac = sparsejac.least_squares_jacobian(residuals, x0, args=args)
    prep = time.perf_counter() - t0
    print(f"sparsejac preparation: {prep:.2f} s -> {jac!r}")
    same = (jac.sparsity != (pattern != 0)).nnz == 0
    print(f"detected pattern equals the cookbook's hand-built one: {same}")
    if not same:
        raise SystemExit("the detected pattern differs from the hand-built one")

    print(f"\none Jacobian, minimum of {repeats} runs. scipy's finite differences (approximate),"
          " approx_derivative(sparsity=(pattern, groups)):\n  'as lsq' with the groups "
          "least_squares(jac_sparsity=pattern) computes (scipy's group_columns), 'same groups' "
          "with sparsejac's column colouring")
    print(f"{'residuals spelled as':<22} {'f [ms]':>8} {'sparsejac [ms]':>15} "
          f"{'FD as lsq [ms]':>15} {'speedup':>8} {'FD same groups [ms]':>20} {'speedup':>8} "
          f"{'max |J - J_fd|':>15}")
    for name, fun in (("rotation per camera", residuals),
                      ("cookbook (per obs.)", residuals_cookbook)):
        (t_f, t_ours, t_fd, t_own), j, (groups, scipy_groups), err = time_one_jacobian(
            fun, x0, args, pattern, repeats)
        print(f"{name:<22} {t_f * 1e3:>8.2f} {t_ours * 1e3:>15.2f} {t_own * 1e3:>15.2f} "
              f"{t_own / t_ours:>7.1f}x {t_fd * 1e3:>20.2f} {t_fd / t_ours:>7.1f}x "
              f"{err:>15.1e}")
    print(f"({j.n_products} products for sparsejac ({j.mode} mode); scipy: "
          f"{scipy_groups.max() + 1} groups as least_squares colours them, "
          f"{groups.max() + 1} with sparsejac's colouring, + 1 evaluation at x; "
          f"max |J| = {np.abs(j(x0, *args).data).max():.1e})")

    options = {"x_scale": "jac", "ftol": 1e-6, "method": "trf", "args": args}
    runs = {}
    for name, extra in (("sparsejac jac=", {"jac": jac}),
                        ("scipy jac_sparsity=", {"jac_sparsity": pattern})):
        t0 = time.perf_counter()
        res = least_squares(residuals, x0, **extra, **options)
        runs[name] = (res, time.perf_counter() - t0)

    cost0 = 0.5 * np.sum(residuals(x0, *args) ** 2)
    print(f"\nfit with least_squares(method='trf', x_scale='jac', ftol=1e-6); initial cost "
          f"{cost0:.6e}")
    print(f"{'fit':<22} {'final cost':>16} {'nfev':>5} {'njev':>5} {'time [s]':>9}")
    for name, (res, elapsed) in runs.items():
        print(f"{name:<22} {res.cost:>16.10e} {res.nfev:>5} {res.njev:>5} {elapsed:>9.2f}")
    a, b = (r[0] for r in runs.values())
    # parameters are defined up to a similarity transform: compare what the fits predict
    pred_a, pred_b = a.fun + points_2d.ravel(), b.fun + points_2d.ravel()
    print(f"relative difference of the final costs: {abs(a.cost - b.cost) / b.cost:.1e}; "
          f"max difference of the fitted reprojections: {np.abs(pred_a - pred_b).max():.1e} "
          "pixels")


if __name__ == "__main__":
    if os.environ.get("SPARSEJAC_EXAMPLE_SMALL"):
        main(n_cameras=4, n_points=40, views_per_point=3, repeats=3)
    else:
        main(n_cameras=20, n_points=4000, views_per_point=4, repeats=20)
