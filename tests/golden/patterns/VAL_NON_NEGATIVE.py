# Golden rendering of the VAL_NON_NEGATIVE example, checked by tests/test_patterns.py.
# Regenerate with DD_UPDATE_GOLDEN=1 after a deliberate template change.

from golden import _checks as check


def example(timeout_s):
    """Run the example of VAL_NON_NEGATIVE."""
    # VAL: VAL_NON_NEGATIVE(timeout_s)
    check.non_negative(timeout_s, at=_AT[3])


# Where each check above is written: by spec and document line, what the check expects
# and the label of each value its failure message shows.
_AT = check.sites(
    "design/golden.md",
    {
        "Golden.check": {
            3: ("timeout_s to be a number >= 0", "timeout_s"),
        },
    },
)
