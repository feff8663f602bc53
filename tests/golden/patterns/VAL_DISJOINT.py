# Golden rendering of the VAL_DISJOINT example, checked by tests/test_patterns.py.
# Regenerate with DD_UPDATE_GOLDEN=1 after a deliberate template change.

import reprlib


def check(rollout_gpus, train_gpus):
    """Run the example of VAL_DISJOINT."""
    # VAL: VAL_DISJOINT(rollout_gpus, train_gpus)
    if any(_dd_x in train_gpus for _dd_x in rollout_gpus):
        _dd_common = [_dd_x for _dd_x in rollout_gpus if _dd_x in train_gpus]
        raise ValueError(
            "VAL_DISJOINT failed in Golden.check (design/golden.md:3): expected rollout_gpus and "
            f"train_gpus to share no item (where common={reprlib.repr(_dd_common)})"
        )
