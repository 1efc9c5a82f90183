"""The package namespace: public names load on first use and stay what they are."""

from __future__ import annotations

import importlib
import importlib.util
import pkgutil
import subprocess
import sys

import pytest

import sparsejac


def test_no_public_name_is_also_a_submodule() -> None:
    """Importing a submodule rebinds the package attribute of its name (``sparsejac.jacobian``
    would then be a module, not the function)."""
    clashes = [n for n in sparsejac.__all__
               if importlib.util.find_spec(f"sparsejac.{n}") is not None]
    assert not clashes


def test_public_names_survive_importing_every_submodule() -> None:
    for info in pkgutil.walk_packages(sparsejac.__path__, "sparsejac."):
        if info.name != "sparsejac.__main__":
            importlib.import_module(info.name)
    for name in sparsejac.__all__:
        obj = getattr(sparsejac, name)
        assert not isinstance(obj, type(sparsejac)), f"sparsejac.{name} is a module"
    assert callable(sparsejac.jacobian)


def test_import_is_light() -> None:
    """``import sparsejac`` loads neither numba nor scipy.sparse (they load on first use)."""
    code = ("import sys, sparsejac\n"
            "print(sorted(m for m in ('numba', 'scipy.sparse', 'scipy.optimize', 'matplotlib')"
            " if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=120)
    assert out.stdout.strip() == "[]"


def test_tracing_pauses_the_cyclic_collector_and_restores_it() -> None:
    import gc

    import numpy as np

    from sparsejac.tracing import trace

    seen: list[bool] = []

    def f(x: object) -> object:
        seen.append(gc.isenabled())
        return x

    def broken(x: object) -> object:
        raise KeyError("inside f")

    assert gc.isenabled()
    trace(f, np.ones(2))
    assert seen == [False]
    assert gc.isenabled()
    with pytest.raises(KeyError):
        trace(broken, np.ones(2))
    assert gc.isenabled()
    gc.disable()
    try:
        trace(f, np.ones(2))
        assert not gc.isenabled()  # left as the caller had it
    finally:
        gc.enable()
