# Golden rendering of the VAL_TYPE_CHECK example, checked by tests/test_patterns.py.
# Regenerate with DD_UPDATE_GOLDEN=1 after a deliberate template change.

import reprlib


def check(config, PoolConfig):
    """Run the example of VAL_TYPE_CHECK."""
    # VAL: VAL_TYPE_CHECK(config, PoolConfig)
    if not isinstance(config, PoolConfig):
        raise TypeError(
            "VAL_TYPE_CHECK failed in Golden.check (design/golden.md:3): expected config to be "
            f"an instance of PoolConfig (where config={reprlib.repr(config)}, "
            f"type(config)={reprlib.repr(type(config))})"
        )
