"""Cold start: what a fresh Python process pays before its first Jacobian, and its answer.

Each measurement runs in a new interpreter (``subprocess``), best of ``--repeats``, with
Python's bytecode cache on (its own ``PYTHONPYCACHEPREFIX``, filled by an untimed first run),
as an installed package has it: an environment with ``PYTHONDONTWRITEBYTECODE`` set would
otherwise compile every module from source in every process (about 0.1 s for sparsejac's own;
``--source`` measures that case).

* ``import numpy`` alone (the floor every numpy program pays);
* ``import sparsejac`` after numpy (public names load their modules on first use);
* the first one-off ``sparsejac.jacobian(f, x)`` of a small function in that process
  (n = 100; tracing, detection, colouring, evaluation, plus the modules and compiled kernels
  it loads), and the first prepared ``SparseJacobian`` and its first call after it;
* the same first Jacobians in a process that imported ``scipy.integrate`` first (as a
  ``solve_ivp`` user's script does): what sparsejac adds to such a program's start;
* **a whole script**: a fresh process solving HIRES (n = 8) with ``solve_ivp(method="BDF")``,
  then Broyden's tridiagonal least squares (n = 100 to 10⁵), with sparsejac's Jacobians
  (import and preparation included) and with scipy's finite differences given the pattern;
  the time after ``import scipy`` (which both pay; HIRES's row includes importing
  ``scipy.integrate`` and ``scipy.optimize``);
* the same first Jacobians with an **empty kernel cache** (``NUMBA_CACHE_DIR`` pointed at a
  new directory), at n = 10⁶ (smaller ones run numpy paths and interpreted kernels and
  compile nothing):
  what the first use after installing costs, numba compiling every kernel they need
  (sparsejac says so with a ``KernelCompilationWarning``);
* ``sparsejac warm-up`` with an empty cache (it compiles the kernels of the common paths
  ahead), and the first prepared Jacobian after it.

    .venv/bin/python benchmarks/startup.py               # about a minute (the cold cache run
                                                         # compiles for tens of seconds)
    .venv/bin/python benchmarks/startup.py --no-compile  # skip the empty-cache run
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from typing import Any

PROBE = r"""
import json, time
t0 = time.perf_counter()
import numpy as np
t1 = time.perf_counter()
import sparsejac
t2 = time.perf_counter()
N = 100
def f(x):
    return x[1:] ** 2 - 2.5 * x[:-1] + np.sin(x[1:])
J = sparsejac.jacobian(f, np.linspace(0.1, 1.0, N))
t3 = time.perf_counter()
jac = sparsejac.SparseJacobian(f, np.linspace(0.1, 1.0, N))
t4 = time.perf_counter()
jac(np.linspace(0.2, 1.0, N))
t5 = time.perf_counter()
print(json.dumps({"numpy": t1 - t0, "import": t2 - t1, "first_jacobian": t3 - t2,
                  "prepare": t4 - t3, "first_call": t5 - t4}))
"""


#: The same first Jacobians in a process that has imported scipy's ODE solvers first, as a
#: ``solve_ivp`` user's script has (scipy.integrate brings scipy.sparse and scipy.special):
#: what sparsejac itself adds to such a program's start.
SOLVER_PROBE = PROBE.replace("import numpy as np\n",
                             "import numpy as np\nimport scipy.integrate\n", 1)


#: The empty-cache rows: a size whose kernels run compiled (small inputs are interpreted).
COLD_PROBE = PROBE.replace("N = 100\n", "N = 1_000_000\n", 1)

#: A whole script, timed after ``import scipy`` (which both contenders pay): HIRES with BDF
#: and Broyden's tridiagonal least squares, with ``jac=`` sparsejac's adapter (``"ours"``,
#: import and preparation included) or scipy's finite differences given the pattern (``"fd"``).
SCRIPT = r"""
import json, sys, time
import numpy as np
import scipy
t0 = time.perf_counter()
from scipy.integrate import solve_ivp
from scipy.optimize import least_squares
import scipy.sparse as sp
ours = sys.argv[1] == "ours"
if ours:
    import sparsejac
sys.path.insert(0, sys.argv[3])
from problems import HIRES_Y0 as y0, broyden, hires
kw = ({"jac": sparsejac.ode_jacobian(hires, 0.0, y0)} if ours
      else {"jac_sparsity": np.ones((8, 8))})
sol = solve_ivp(hires, (0.0, 321.8122), y0, method="BDF", rtol=1e-6, atol=1e-9, **kw)
assert sol.success
t1 = time.perf_counter()
n = int(sys.argv[2])
x0 = -np.ones(n)
kw = ({"jac": sparsejac.least_squares_jacobian(broyden, x0)} if ours
      else {"jac_sparsity": sp.diags_array([np.ones(n - 1), np.ones(n), np.ones(n - 1)],
                                           offsets=[-1, 0, 1])})
res = least_squares(broyden, x0, **kw)
assert res.success
t2 = time.perf_counter()
print(json.dumps({"hires": t1 - t0, "broyden": t2 - t1, "njev": [int(sol.njev),
                                                                 int(res.njev)]}))
"""

#: The environment of every run (set by ``main``): bytecode cache on, in a directory of its own.
ENV: dict[str, str] = {}


HERE = os.path.dirname(os.path.abspath(__file__))


def run(env: dict[str, str] | None = None, probe: str = PROBE, *argv: str
        ) -> dict[str, Any]:
    argv = (*argv, HERE) if argv else argv
    out = subprocess.run([sys.executable, "-c", probe, *argv], capture_output=True,
                         text=True, check=True, env={**ENV, **(env or {})})
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--no-compile", action="store_true", help="skip the empty-cache run")
    parser.add_argument("--source", action="store_true",
                        help="no bytecode cache: every module compiled from source")
    args = parser.parse_args(argv)
    pycache = tempfile.TemporaryDirectory()
    ENV.clear()
    ENV.update({k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"})
    if args.source:
        ENV["PYTHONDONTWRITEBYTECODE"] = "1"
        ENV["PYTHONPYCACHEPREFIX"] = pycache.name  # an empty one: nothing cached
    else:
        ENV["PYTHONPYCACHEPREFIX"] = pycache.name
    run()  # make sure the on-disk kernel cache and the bytecode cache are warm
    run(probe=SOLVER_PROBE)
    run(None, SCRIPT, "ours", "100")
    run(None, SCRIPT, "fd", "100")
    warm = [run() for _ in range(args.repeats)]
    best = {k: min(r[k] for r in warm) for k in warm[0]}
    print(f"{platform.python_implementation()} {platform.python_version()}, "
          f"{platform.machine()}, {datetime.date.today().isoformat()}; fresh process each, "
          f"best of {args.repeats}; "
          + ("every module compiled from source" if args.source else "bytecode cached"))
    print()
    print("| step (fresh process, warm kernel cache) | seconds |")
    print("|---|---|")
    labels = {"numpy": "`import numpy`", "import": "`import sparsejac` (after numpy)",
              "first_jacobian": "first `sparsejac.jacobian(f, x)`, n = 100",
              "prepare": "then `SparseJacobian(f, x0)`", "first_call": "then its first call"}
    for key, label in labels.items():
        print(f"| {label} | {best[key]:.3f} |")
    total = best["import"] + best["first_jacobian"]
    print(f"| import + first Jacobian | {total:.3f} |")
    solver = [run(probe=SOLVER_PROBE) for _ in range(args.repeats)]
    sbest = {k: min(r[k] for r in solver) for k in solver[0]}
    print(f"| after `import scipy.integrate`: import + first `jacobian(f, x)` | "
          f"{sbest['import'] + sbest['first_jacobian']:.3f} |")
    print(f"| after `import scipy.integrate`: then `SparseJacobian(f, x0)` + first call | "
          f"{sbest['prepare'] + sbest['first_call']:.3f} |")
    print()
    print("| script after `import scipy` (fresh process) | njev | sparsejac s | FD s | "
          "FD / sparsejac |")
    print("|---|--:|--:|--:|--:|")
    for n in ("100", "1000", "10000", "100000"):
        ours, fd = [], []
        for _ in range(args.repeats):  # alternating
            ours.append(run(None, SCRIPT, "ours", n))
            fd.append(run(None, SCRIPT, "fd", n))
        rows = ((0, "hires", "HIRES, `solve_ivp` BDF"),) if n == "100" else ()
        rows += ((1, "broyden", f"Broyden n = {int(n):,}, `least_squares`"),)
        for i, key, label in rows:
            a, b = min(r[key] for r in ours), min(r[key] for r in fd)
            print(f"| {label} | {ours[0]['njev'][i]} | {a:.3f} | {b:.3f} | {b / a:.2f} |")
    print()
    if not args.no_compile:
        with tempfile.TemporaryDirectory() as cache:
            env = {"NUMBA_CACHE_DIR": cache}
            cold = run(env, COLD_PROBE)
        print("| empty kernel cache (first use after installing), n = 1,000,000 | seconds |")
        print("|---|---|")
        print(f"| import + first `jacobian(f, x)` | "
              f"{cold['import'] + cold['first_jacobian']:.1f} |")
        print(f"| then `SparseJacobian(f, x0)` + first call | "
              f"{cold['prepare'] + cold['first_call']:.1f} |")
        with tempfile.TemporaryDirectory() as cache:
            env = {"NUMBA_CACHE_DIR": cache}
            t = time.perf_counter()
            subprocess.run([sys.executable, "-m", "sparsejac", "warm-up"],
                           env={**ENV, **env}, check=True, capture_output=True)
            warm_up = time.perf_counter() - t
            after = run(env, COLD_PROBE)
        print(f"| `sparsejac warm-up` with an empty kernel cache (once, after installing) | "
              f"{warm_up:.1f} |")
        print(f"| after it: `SparseJacobian(f, x0)` + first call | "
              f"{after['prepare'] + after['first_call']:.3f} |")
    pycache.cleanup()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
