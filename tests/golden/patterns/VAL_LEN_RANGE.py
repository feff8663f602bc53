# Golden rendering of the VAL_LEN_RANGE example, checked by tests/test_patterns.py.
# Regenerate with DD_UPDATE_GOLDEN=1 after a deliberate template change.

from golden import _checks as check


def example(name):
    """Run the example of VAL_LEN_RANGE."""
    # VAL: VAL_LEN_RANGE(name, min=1, max=64)
    check.len_range(name, min=1, max=64, at=_AT[3])


# Where each check above is written: by spec and document line, what the check expects
# and the label of each value its failure message shows.
_AT = check.sites(
    "design/golden.md",
    {
        "Golden.check": {
            3: ("len(name) in [1, 64]", "len(name)"),
        },
    },
)
