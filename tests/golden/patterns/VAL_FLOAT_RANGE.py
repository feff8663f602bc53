# Golden rendering of the VAL_FLOAT_RANGE example, checked by tests/test_patterns.py.
# Regenerate with DD_UPDATE_GOLDEN=1 after a deliberate template change.

from golden import _checks as check


def example(learning_rate):
    """Run the example of VAL_FLOAT_RANGE."""
    # VAL: VAL_FLOAT_RANGE(learning_rate, min=0.0, max=1.0)
    check.float_range(learning_rate, min=0.0, max=1.0, at=_AT[3])


# Where each check above is written: by spec and document line, what the check expects
# and the label of each value its failure message shows.
_AT = check.sites(
    "design/golden.md",
    {
        "Golden.check": {
            3: ("learning_rate to be a real number in [0.0, 1.0]", "learning_rate"),
        },
    },
)
