# Golden rendering of the VAL_NON_EMPTY example, checked by tests/test_patterns.py.
# Regenerate with DD_UPDATE_GOLDEN=1 after a deliberate template change.

import reprlib


def check(target_gpus):
    """Run the example of VAL_NON_EMPTY."""
    # VAL: VAL_NON_EMPTY(target_gpus)
    if len(target_gpus) == 0:
        raise ValueError(
            "VAL_NON_EMPTY failed in Golden.check (design/golden.md:3): expected target_gpus to "
            f"be non-empty (where target_gpus={reprlib.repr(target_gpus)})"
        )
