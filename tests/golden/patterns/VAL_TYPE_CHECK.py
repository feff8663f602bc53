# Golden rendering of the VAL_TYPE_CHECK example, checked by tests/test_patterns.py.
# Regenerate with DD_UPDATE_GOLDEN=1 after a deliberate template change.

from golden import _checks as check


def example(config, PoolConfig):
    """Run the example of VAL_TYPE_CHECK."""
    # VAL: VAL_TYPE_CHECK(config, PoolConfig)
    check.instance(config, PoolConfig, at=_AT[3])


# Where each check above is written: by spec and document line, what the check expects
# and the label of each value its failure message shows.
_AT = check.sites(
    "design/golden.md",
    {
        "Golden.check": {
            3: ("config to be an instance of PoolConfig", "config", "type(config)"),
        },
    },
)
