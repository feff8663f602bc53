# Golden rendering of the VAL_KEYS_PRESENT example, checked by tests/test_patterns.py.
# Regenerate with DD_UPDATE_GOLDEN=1 after a deliberate template change.


def check(config):
    """Run the example of VAL_KEYS_PRESENT."""
    # VAL: VAL_KEYS_PRESENT(config, ("model", "num_gpus"))
    if not all(_dd_k in config for _dd_k in ("model", "num_gpus")):
        raise ValueError(
            'VAL_KEYS_PRESENT failed in Golden.check (design/golden.md:3): expected config to hold every key of ("model", "num_gpus")'
            + " (where missing=" + repr([_dd_k for _dd_k in ("model", "num_gpus") if _dd_k not in config])
            + ")"
        )
