# Golden rendering of the VAL_STATE_TRANSITION example, checked by tests/test_patterns.py.
# Regenerate with DD_UPDATE_GOLDEN=1 after a deliberate template change.

import reprlib


def check(state, new_state, TRANSITIONS):
    """Run the example of VAL_STATE_TRANSITION."""
    # VAL: VAL_STATE_TRANSITION(state, new_state, TRANSITIONS)
    if new_state not in TRANSITIONS.get(state, ()):
        raise ValueError(
            "VAL_STATE_TRANSITION failed in Golden.check (design/golden.md:3): expected "
            "TRANSITIONS to allow the transition state -> new_state (where "
            f"state={reprlib.repr(state)}, new_state={reprlib.repr(new_state)}, "
            f"allowed={reprlib.repr(TRANSITIONS.get(state, ()))})"
        )
