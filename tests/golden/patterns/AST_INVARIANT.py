# Golden rendering of the AST_INVARIANT example, checked by tests/test_patterns.py.
# Regenerate with DD_UPDATE_GOLDEN=1 after a deliberate template change.

from golden import _checks as check


def example(self):
    """Run the example of AST_INVARIANT."""
    # AST: AST_INVARIANT(self.free_gpus.isdisjoint(self.busy_gpus))
    check.invariant(self.free_gpus.isdisjoint(self.busy_gpus), at=_AT[3])


# Where each check above is written: by spec and document line, what the check expects
# and the label of each value its failure message shows.
_AT = check.sites(
    "design/golden.md",
    {
        "Golden.check": {
            3: ("self.free_gpus.isdisjoint(self.busy_gpus)", "self.free_gpus", "self.busy_gpus"),
        },
    },
)
