# Golden rendering of the VAL_STATE_TRANSITION example, checked by tests/test_patterns.py.
# Regenerate with DD_UPDATE_GOLDEN=1 after a deliberate template change.

from golden import _checks as check


def example(state, new_state, TRANSITIONS):
    """Run the example of VAL_STATE_TRANSITION."""
    # VAL: VAL_STATE_TRANSITION(state, new_state, TRANSITIONS)
    check.transition(state, new_state, TRANSITIONS, at=_AT[3])


# Where each check above is written: by spec and document line, what the check expects
# and the label of each value its failure message shows.
_AT = check.sites(
    "design/golden.md",
    {
        "Golden.check": {
            3: (
                "TRANSITIONS to allow the transition state -> new_state",
                "state",
                "new_state",
                "allowed",
            ),
        },
    },
)
