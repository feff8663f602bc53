"""Step 8 of design/rlsched_core.md: the staleness hook and the lazy package exports."""

import pytest

import rlsched.core
from rlsched.core.hooks import BoundedStaleness


def test_bounded_staleness() -> None:
    sync = BoundedStaleness(0)
    assert sync.oldest_allowed(3) == 3 and not sync.may_dispatch(2, 3) and sync.may_dispatch(3, 3)
    ratio1 = BoundedStaleness(1)
    assert ratio1.oldest_allowed(3) == 2 and ratio1.may_dispatch(2, 3)
    assert ratio1.admission_limit(64) == 128 and sync.admission_limit(64) == 64
    with pytest.raises(ValueError, match="VAL_INT_RANGE failed"):
        BoundedStaleness(-1)


def test_lazy_exports() -> None:
    assert rlsched.core.BoundedStaleness is BoundedStaleness
    from rlsched.core import DeviceMode, FifoPlacement, TrajectoryBuffer  # noqa: F401

    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        rlsched.core.nope  # noqa: B018
