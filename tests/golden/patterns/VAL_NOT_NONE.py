# Golden rendering of the VAL_NOT_NONE example, checked by tests/test_patterns.py.
# Regenerate with DD_UPDATE_GOLDEN=1 after a deliberate template change.


def check(engine):
    """Run the example of VAL_NOT_NONE."""
    # VAL: VAL_NOT_NONE(engine)
    if engine is None:
        raise ValueError(
            "VAL_NOT_NONE failed in Golden.check (design/golden.md:3): expected engine to be not "
            "None"
        )
