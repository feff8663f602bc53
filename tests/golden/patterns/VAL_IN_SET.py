# Golden rendering of the VAL_IN_SET example, checked by tests/test_patterns.py.
# Regenerate with DD_UPDATE_GOLDEN=1 after a deliberate template change.

import reprlib


def check(mode):
    """Run the example of VAL_IN_SET."""
    # VAL: VAL_IN_SET(mode, {"rollout", "train"})
    if mode not in {"rollout", "train"}:
        raise ValueError(
            "VAL_IN_SET failed in Golden.check (design/golden.md:3): expected mode to be one of "
            f'{{"rollout", "train"}} (where mode={reprlib.repr(mode)})'
        )
