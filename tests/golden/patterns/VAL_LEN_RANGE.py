# Golden rendering of the VAL_LEN_RANGE example, checked by tests/test_patterns.py.
# Regenerate with DD_UPDATE_GOLDEN=1 after a deliberate template change.

import reprlib


def check(name):
    """Run the example of VAL_LEN_RANGE."""
    # VAL: VAL_LEN_RANGE(name, min=1, max=64)
    if not 1 <= len(name) <= 64:
        raise ValueError(
            "VAL_LEN_RANGE failed in Golden.check (design/golden.md:3): expected len(name) in "
            f"[1, 64] (where len(name)={reprlib.repr(len(name))})"
        )
