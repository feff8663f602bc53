# Golden rendering of the VAL_INT_RANGE example, checked by tests/test_patterns.py.
# Regenerate with DD_UPDATE_GOLDEN=1 after a deliberate template change.

from golden import _checks as check


def example(target_gpus, num_gpus):
    """Run the example of VAL_INT_RANGE."""
    # VAL: VAL_INT_RANGE(target_gpus, min=0, max=num_gpus - 1, each=True)
    check.int_range(target_gpus, min=0, max=num_gpus - 1, each=True, at=_AT[3])


# Where each check above is written: by spec and document line, what the check expects
# and the label of each value its failure message shows.
_AT = check.sites(
    "design/golden.md",
    {
        "Golden.check": {
            3: (
                "every item of target_gpus to be an int in [0, num_gpus - 1]",
                "item",
                None,
                "num_gpus - 1",
            ),
        },
    },
)
