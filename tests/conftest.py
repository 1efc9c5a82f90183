"""Shared fixtures: a seeded random generator, the shared matrix collection, hypothesis profiles."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, settings

# Derandomised in CI so a red run is reproducible; `HYPOTHESIS_PROFILE=dev` explores more.
settings.register_profile(
    "ci",
    derandomize=True,
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("dev", max_examples=300, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

REPO = Path(__file__).resolve().parent.parent
SHARED_MATRICES = REPO.parent / "shared" / "data" / "matrices"


def shared_matrix_files() -> list[Path]:
    """The Matrix Market files of ../shared/data/matrices, or [] where it is absent."""
    if not SHARED_MATRICES.is_dir():
        return []
    return sorted(SHARED_MATRICES.glob("*.mtx"))


requires_shared = pytest.mark.skipif(
    not SHARED_MATRICES.is_dir(),
    reason="../shared/data/matrices is absent (it exists only in the development checkout)",
)


@pytest.fixture
def rng() -> np.random.Generator:
    """A seeded generator, fresh for every test."""
    return np.random.default_rng(20261122)
