# Golden rendering of the VAL_NON_BLANK example, checked by tests/test_patterns.py.
# Regenerate with DD_UPDATE_GOLDEN=1 after a deliberate template change.

from golden import _checks as check


def example(model_name):
    """Run the example of VAL_NON_BLANK."""
    # VAL: VAL_NON_BLANK(model_name)
    check.non_blank(model_name, at=_AT[3])


# Where each check above is written: by spec and document line, what the check expects
# and the label of each value its failure message shows.
_AT = check.sites(
    "design/golden.md",
    {
        "Golden.check": {
            3: ("model_name to be a non-blank str", "model_name"),
        },
    },
)
