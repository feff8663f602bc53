# Golden rendering of the VAL_NON_NEGATIVE example, checked by tests/test_patterns.py.
# Regenerate with DD_UPDATE_GOLDEN=1 after a deliberate template change.

import reprlib


def check(timeout_s):
    """Run the example of VAL_NON_NEGATIVE."""
    # VAL: VAL_NON_NEGATIVE(timeout_s)
    try:
        _dd_ok = not isinstance(timeout_s, bool) and timeout_s >= 0
    except TypeError:
        _dd_ok = False
    if not _dd_ok:
        raise ValueError(
            "VAL_NON_NEGATIVE failed in Golden.check (design/golden.md:3): expected timeout_s to "
            f"be a number >= 0 (where timeout_s={reprlib.repr(timeout_s)})"
        )
