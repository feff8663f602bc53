# Golden rendering of the AST_POSTCONDITION example, checked by tests/test_patterns.py.
# Regenerate with DD_UPDATE_GOLDEN=1 after a deliberate template change.

from golden import _checks as check


def example(offload_ranks):
    """Run the example of AST_POSTCONDITION."""
    # AST: AST_POSTCONDITION(len(offload_ranks) > 0)
    check.postcondition(len(offload_ranks) > 0, at=_AT[3])


# Where each check above is written: by spec and document line, what the check expects
# and the label of each value its failure message shows.
_AT = check.sites(
    "design/golden.md",
    {
        "Golden.check": {
            3: ("len(offload_ranks) > 0", "offload_ranks"),
        },
    },
)
