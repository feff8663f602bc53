# Golden rendering of the VAL_NON_EMPTY example, checked by tests/test_patterns.py.
# Regenerate with DD_UPDATE_GOLDEN=1 after a deliberate template change.

from golden import _checks as check


def example(target_gpus):
    """Run the example of VAL_NON_EMPTY."""
    # VAL: VAL_NON_EMPTY(target_gpus)
    check.non_empty(target_gpus, at=_AT[3])


# Where each check above is written: by spec and document line, what the check expects
# and the label of each value its failure message shows.
_AT = check.sites(
    "design/golden.md",
    {
        "Golden.check": {
            3: ("target_gpus to be non-empty", "target_gpus"),
        },
    },
)
