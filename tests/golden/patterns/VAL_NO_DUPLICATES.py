# Golden rendering of the VAL_NO_DUPLICATES example, checked by tests/test_patterns.py.
# Regenerate with DD_UPDATE_GOLDEN=1 after a deliberate template change.

from golden import _checks as check


def example(target_gpus):
    """Run the example of VAL_NO_DUPLICATES."""
    # VAL: VAL_NO_DUPLICATES(target_gpus)
    check.no_duplicates(target_gpus, at=_AT[3])


# Where each check above is written: by spec and document line, what the check expects
# and the label of each value its failure message shows.
_AT = check.sites(
    "design/golden.md",
    {
        "Golden.check": {
            3: ("no duplicate items in target_gpus", "duplicates"),
        },
    },
)
