"""Shared by the per-step checks: `steps/` is importable, so checks can share small helpers."""

import os
import sys
from pathlib import Path

from hypothesis import HealthCheck, settings

sys.path.insert(0, str(Path(__file__).resolve().parent))

# Ray reads this when it is imported, and some checks import Ray before the runtime (which sets
# it too): every local cluster a check starts listens on loopback only
os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")

# Hypothesis runs the same examples every time (derandomize) and never judges by the clock: the
# suite must not depend on timing or on a previous run's database. HYPOTHESIS_PROFILE=explore
# searches with fresh randomness when hunting for bugs.
_QUIET = [HealthCheck.too_slow, HealthCheck.data_too_large]
settings.register_profile(
    "ci", derandomize=True, database=None, deadline=None, suppress_health_check=_QUIET
)
settings.register_profile("explore", deadline=None, suppress_health_check=_QUIET)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
