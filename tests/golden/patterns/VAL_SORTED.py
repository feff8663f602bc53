# Golden rendering of the VAL_SORTED example, checked by tests/test_patterns.py.
# Regenerate with DD_UPDATE_GOLDEN=1 after a deliberate template change.

from golden import _checks as check


def example(boundaries):
    """Run the example of VAL_SORTED."""
    # VAL: VAL_SORTED(boundaries, strict=True)
    check.ascending(boundaries, strict=True, at=_AT[3])


# Where each check above is written: by spec and document line, what the check expects
# and the label of each value its failure message shows.
_AT = check.sites(
    "design/golden.md",
    {
        "Golden.check": {
            3: ("boundaries to be strictly ascending", "first unordered pair"),
        },
    },
)
