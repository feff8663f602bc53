# Golden rendering of the VAL_IN_SET example, checked by tests/test_patterns.py.
# Regenerate with DD_UPDATE_GOLDEN=1 after a deliberate template change.

from golden import _checks as check


def example(mode):
    """Run the example of VAL_IN_SET."""
    # VAL: VAL_IN_SET(mode, {"rollout", "train"})
    check.in_set(mode, {"rollout", "train"}, at=_AT[3])


# Where each check above is written: by spec and document line, what the check expects
# and the label of each value its failure message shows.
_AT = check.sites(
    "design/golden.md",
    {
        "Golden.check": {
            3: ('mode to be one of {"rollout", "train"}', "mode"),
        },
    },
)
