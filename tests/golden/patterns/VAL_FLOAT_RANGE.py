# Golden rendering of the VAL_FLOAT_RANGE example, checked by tests/test_patterns.py.
# Regenerate with DD_UPDATE_GOLDEN=1 after a deliberate template change.

import reprlib


def check(learning_rate):
    """Run the example of VAL_FLOAT_RANGE."""
    # VAL: VAL_FLOAT_RANGE(learning_rate, min=0.0, max=1.0)
    if (
        isinstance(learning_rate, bool)
        or not isinstance(learning_rate, (int, float))
        or not 0.0 <= learning_rate <= 1.0
    ):
        raise ValueError(
            "VAL_FLOAT_RANGE failed in Golden.check (design/golden.md:3): expected learning_rate "
            "to be a real number in [0.0, 1.0] (where "
            f"learning_rate={reprlib.repr(learning_rate)})"
        )
