# Golden rendering of the VAL_POSITIVE example, checked by tests/test_patterns.py.
# Regenerate with DD_UPDATE_GOLDEN=1 after a deliberate template change.

import reprlib


def check(batch_size):
    """Run the example of VAL_POSITIVE."""
    # VAL: VAL_POSITIVE(batch_size)
    try:
        _dd_ok = not isinstance(batch_size, bool) and batch_size > 0
    except TypeError:
        _dd_ok = False
    if not _dd_ok:
        raise ValueError(
            "VAL_POSITIVE failed in Golden.check (design/golden.md:3): expected batch_size to be "
            f"a number > 0 (where batch_size={reprlib.repr(batch_size)})"
        )
