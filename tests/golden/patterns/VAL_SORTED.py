# Golden rendering of the VAL_SORTED example, checked by tests/test_patterns.py.
# Regenerate with DD_UPDATE_GOLDEN=1 after a deliberate template change.

import reprlib


def check(boundaries):
    """Run the example of VAL_SORTED."""
    # VAL: VAL_SORTED(boundaries, strict=True)
    if not all(_dd_a < _dd_b for _dd_a, _dd_b in zip(boundaries, list(boundaries)[1:])):
        _dd_value = next(
            (_dd_a, _dd_b)
            for _dd_a, _dd_b in zip(boundaries, list(boundaries)[1:])
            if not _dd_a < _dd_b
        )
        raise ValueError(
            "VAL_SORTED failed in Golden.check (design/golden.md:3): expected boundaries to be "
            f"strictly ascending (where first unordered pair={reprlib.repr(_dd_value)})"
        )
