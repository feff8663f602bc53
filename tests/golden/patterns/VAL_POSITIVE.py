# Golden rendering of the VAL_POSITIVE example, checked by tests/test_patterns.py.
# Regenerate with DD_UPDATE_GOLDEN=1 after a deliberate template change.

from golden import _checks as check


def example(batch_size):
    """Run the example of VAL_POSITIVE."""
    # VAL: VAL_POSITIVE(batch_size)
    check.positive(batch_size, at=_AT[3])


# Where each check above is written: by spec and document line, what the check expects
# and the label of each value its failure message shows.
_AT = check.sites(
    "design/golden.md",
    {
        "Golden.check": {
            3: ("batch_size to be a number > 0", "batch_size"),
        },
    },
)
