# Golden rendering of the VAL_NON_BLANK example, checked by tests/test_patterns.py.
# Regenerate with DD_UPDATE_GOLDEN=1 after a deliberate template change.

import reprlib


def check(model_name):
    """Run the example of VAL_NON_BLANK."""
    # VAL: VAL_NON_BLANK(model_name)
    if not isinstance(model_name, str) or not model_name.strip():
        raise ValueError(
            "VAL_NON_BLANK failed in Golden.check (design/golden.md:3): expected model_name to "
            f"be a non-blank str (where model_name={reprlib.repr(model_name)})"
        )
