# Golden rendering of the VAL_POSITIVE example, checked by tests/test_patterns.py.
# Regenerate with DD_UPDATE_GOLDEN=1 after a deliberate template change.


def check(batch_size):
    """Run the example of VAL_POSITIVE."""
    # VAL: VAL_POSITIVE(batch_size)
    if not batch_size > 0:
        raise ValueError(
            "VAL_POSITIVE failed in Golden.check (design/golden.md:3): expected batch_size > 0"
            + " (where batch_size=" + repr(batch_size)
            + ")"
        )
