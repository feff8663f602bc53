# Golden rendering of the VAL_SUBSET example, checked by tests/test_patterns.py.
# Regenerate with DD_UPDATE_GOLDEN=1 after a deliberate template change.

import reprlib


def check(target_gpus, free_gpus):
    """Run the example of VAL_SUBSET."""
    # VAL: VAL_SUBSET(target_gpus, free_gpus)
    if not all(_dd_x in free_gpus for _dd_x in target_gpus):
        _dd_extras = [_dd_x for _dd_x in target_gpus if _dd_x not in free_gpus]
        raise ValueError(
            "VAL_SUBSET failed in Golden.check (design/golden.md:3): expected every item of "
            f"target_gpus to be in free_gpus (where extras={reprlib.repr(_dd_extras)}, "
            f"free_gpus={reprlib.repr(free_gpus)})"
        )
