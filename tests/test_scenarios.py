"""The scenario catalogue itself (``tests/scenarios.py``): its hand-derived Jacobians are right."""

from __future__ import annotations

import numpy as np
import pytest

from tests.scenarios import SCENARIOS, Scenario, by_name, fd_jacobian, random_point, scenario_params


@pytest.mark.parametrize("s", scenario_params())
def test_hand_derived_jacobian_matches_central_differences(s: Scenario,
                                                           rng: np.random.Generator) -> None:
    """Each analytic Jacobian agrees with central differences at x0 and at a random point."""
    for x in (s.x0, random_point(s, rng)):
        jac = s.jacobian(x)
        assert jac.shape == (s.m, s.n)
        np.testing.assert_allclose(jac, fd_jacobian(s.f, x), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("s", scenario_params())
def test_pattern_is_the_jacobian_structure_at_x0(s: Scenario) -> None:
    """x0 is generic: the analytic pattern is exactly where the Jacobian is nonzero."""
    assert s.pattern.dtype == bool
    np.testing.assert_array_equal(s.jacobian(s.x0) != 0, s.pattern)


def test_names_are_unique_and_found() -> None:
    """Scenario names are unique ids, and ``by_name`` finds each one."""
    names = [s.name for s in SCENARIOS]
    assert len(set(names)) == len(names)
    assert all(by_name(n).name == n for n in names)
    with pytest.raises(KeyError, match="no scenario 'nope'"):
        by_name("nope")
