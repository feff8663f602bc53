# Golden rendering of the AST_PRECONDITION example, checked by tests/test_patterns.py.
# Regenerate with DD_UPDATE_GOLDEN=1 after a deliberate template change.

from golden import _checks as check


def example(ranks, gpus):
    """Run the example of AST_PRECONDITION."""
    # AST: AST_PRECONDITION(len(ranks) == len(gpus))
    check.precondition(len(ranks) == len(gpus), at=_AT[3])


# Where each check above is written: by spec and document line, what the check expects
# and the label of each value its failure message shows.
_AT = check.sites(
    "design/golden.md",
    {
        "Golden.check": {
            3: ("len(ranks) == len(gpus)", "ranks", "gpus"),
        },
    },
)
