"""Cold start: what a fresh Python process pays before its first Jacobian.

Each measurement runs in a new interpreter (``subprocess``), best of ``--repeats``:

* ``import numpy`` alone (the floor every numpy program pays);
* ``import sparsejac`` after numpy (public names load their modules on first use);
* the first one-off ``sparsejac.jacobian(f, x)`` of a small function in that process
  (n = 100; tracing, detection, colouring, evaluation, plus the modules and compiled kernels
  it loads), and the first prepared ``SparseJacobian`` and its first call after it;
* the same first Jacobians in a process that imported ``scipy.integrate`` first (as a
  ``solve_ivp`` user's script does): what sparsejac adds to such a program's start;
* the same first Jacobians with an **empty kernel cache** (``NUMBA_CACHE_DIR`` pointed at a
  new directory): what the first use after installing costs, numba compiling every kernel
  they need (sparsejac says so with a ``KernelCompilationWarning``);
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

PROBE = r"""
import json, time
t0 = time.perf_counter()
import numpy as np
t1 = time.perf_counter()
import sparsejac
t2 = time.perf_counter()
def f(x):
    return x[1:] ** 2 - 2.5 * x[:-1] + np.sin(x[1:])
J = sparsejac.jacobian(f, np.linspace(0.1, 1.0, 100))
t3 = time.perf_counter()
jac = sparsejac.SparseJacobian(f, np.linspace(0.1, 1.0, 100))
t4 = time.perf_counter()
jac(np.linspace(0.2, 1.0, 100))
t5 = time.perf_counter()
print(json.dumps({"numpy": t1 - t0, "import": t2 - t1, "first_jacobian": t3 - t2,
                  "prepare": t4 - t3, "first_call": t5 - t4}))
"""


#: The same first Jacobians in a process that has imported scipy's ODE solvers first, as a
#: ``solve_ivp`` user's script has (scipy.integrate brings scipy.sparse and scipy.special):
#: what sparsejac itself adds to such a program's start.
SOLVER_PROBE = PROBE.replace("import numpy as np\n",
                             "import numpy as np\nimport scipy.integrate\n", 1)


def run(env: dict[str, str] | None = None, probe: str = PROBE) -> dict[str, float]:
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         check=True, env=env)
    result: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--no-compile", action="store_true", help="skip the empty-cache run")
    args = parser.parse_args(argv)
    run()  # make sure the on-disk kernel cache is warm
    warm = [run() for _ in range(args.repeats)]
    best = {k: min(r[k] for r in warm) for k in warm[0]}
    print(f"{platform.python_implementation()} {platform.python_version()}, "
          f"{platform.machine()}, {datetime.date.today().isoformat()}; fresh process each, "
          f"best of {args.repeats}")
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
    if not args.no_compile:
        with tempfile.TemporaryDirectory() as cache:
            env = {**os.environ, "NUMBA_CACHE_DIR": cache}
            cold = run(env)
        print(f"| empty kernel cache (first use after installing): import + first "
              f"`jacobian(f, x)` | {cold['import'] + cold['first_jacobian']:.1f} |")
        print(f"| empty kernel cache: then `SparseJacobian(f, x0)` + first call | "
              f"{cold['prepare'] + cold['first_call']:.1f} |")
        with tempfile.TemporaryDirectory() as cache:
            env = {**os.environ, "NUMBA_CACHE_DIR": cache}
            t = time.perf_counter()
            subprocess.run([sys.executable, "-m", "sparsejac", "warm-up"], env=env,
                           check=True, capture_output=True)
            warm_up = time.perf_counter() - t
            after = run(env)
        print(f"| `sparsejac warm-up` with an empty kernel cache (once, after installing) | "
              f"{warm_up:.1f} |")
        print(f"| after it: `SparseJacobian(f, x0)` + first call | "
              f"{after['prepare'] + after['first_call']:.3f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
