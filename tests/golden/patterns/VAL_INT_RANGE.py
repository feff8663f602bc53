# Golden rendering of the VAL_INT_RANGE example, checked by tests/test_patterns.py.
# Regenerate with DD_UPDATE_GOLDEN=1 after a deliberate template change.

import reprlib


def check(target_gpus, num_gpus):
    """Run the example of VAL_INT_RANGE."""
    # VAL: VAL_INT_RANGE(target_gpus, min=0, max=num_gpus - 1, each=True)
    for _dd_item in target_gpus:
        if (
            isinstance(_dd_item, bool)
            or not isinstance(_dd_item, int)
            or not 0 <= _dd_item <= (num_gpus - 1)
        ):
            raise ValueError(
                "VAL_INT_RANGE failed in Golden.check (design/golden.md:3): expected every item "
                "of target_gpus to be an int in [0, num_gpus - 1] (where "
                f"item={reprlib.repr(_dd_item)}, num_gpus - 1={reprlib.repr(num_gpus - 1)})"
            )
