# Golden rendering of the VAL_SUBSET example, checked by tests/test_patterns.py.
# Regenerate with DD_UPDATE_GOLDEN=1 after a deliberate template change.

from golden import _checks as check


def example(target_gpus, free_gpus):
    """Run the example of VAL_SUBSET."""
    # VAL: VAL_SUBSET(target_gpus, free_gpus)
    check.subset(target_gpus, free_gpus, at=_AT[3])


# Where each check above is written: by spec and document line, what the check expects
# and the label of each value its failure message shows.
_AT = check.sites(
    "design/golden.md",
    {
        "Golden.check": {
            3: ("every item of target_gpus to be in free_gpus", "extras", "free_gpus"),
        },
    },
)
