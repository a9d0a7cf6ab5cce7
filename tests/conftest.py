"""Shared test configuration: deterministic hypothesis runs, so the suite gives the same result twice."""

import numpy as np
import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "course", derandomize=True, deadline=None, max_examples=200, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile("course")


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(20261129)
