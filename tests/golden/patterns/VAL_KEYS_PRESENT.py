# Golden rendering of the VAL_KEYS_PRESENT example, checked by tests/test_patterns.py.
# Regenerate with DD_UPDATE_GOLDEN=1 after a deliberate template change.

import reprlib


def check(config):
    """Run the example of VAL_KEYS_PRESENT."""
    # VAL: VAL_KEYS_PRESENT(config, ("model", "num_gpus"))
    if not all(_dd_k in config for _dd_k in ("model", "num_gpus")):
        _dd_missing = [_dd_k for _dd_k in ("model", "num_gpus") if _dd_k not in config]
        raise ValueError(
            "VAL_KEYS_PRESENT failed in Golden.check (design/golden.md:3): expected config to "
            f'hold every key of ("model", "num_gpus") (where missing={reprlib.repr(_dd_missing)})'
        )
