# Golden rendering of the VAL_DISJOINT example, checked by tests/test_patterns.py.
# Regenerate with DD_UPDATE_GOLDEN=1 after a deliberate template change.

from golden import _checks as check


def example(rollout_gpus, train_gpus):
    """Run the example of VAL_DISJOINT."""
    # VAL: VAL_DISJOINT(rollout_gpus, train_gpus)
    check.disjoint(rollout_gpus, train_gpus, at=_AT[3])


# Where each check above is written: by spec and document line, what the check expects
# and the label of each value its failure message shows.
_AT = check.sites(
    "design/golden.md",
    {
        "Golden.check": {
            3: ("rollout_gpus and train_gpus to share no item", "common"),
        },
    },
)
