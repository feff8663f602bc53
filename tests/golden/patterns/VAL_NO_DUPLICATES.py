# Golden rendering of the VAL_NO_DUPLICATES example, checked by tests/test_patterns.py.
# Regenerate with DD_UPDATE_GOLDEN=1 after a deliberate template change.

import reprlib


def check(target_gpus):
    """Run the example of VAL_NO_DUPLICATES."""
    # VAL: VAL_NO_DUPLICATES(target_gpus)
    if len(set(target_gpus)) != len(target_gpus):
        _dd_duplicates = [
            _dd_x for _dd_x in dict.fromkeys(target_gpus) if list(target_gpus).count(_dd_x) > 1
        ]
        raise ValueError(
            "VAL_NO_DUPLICATES failed in Golden.check (design/golden.md:3): expected no "
            f"duplicate items in target_gpus (where duplicates={reprlib.repr(_dd_duplicates)})"
        )
