# Golden rendering of the VAL_KEYS_PRESENT example, checked by tests/test_patterns.py.
# Regenerate with DD_UPDATE_GOLDEN=1 after a deliberate template change.

from golden import _checks as check


def example(config):
    """Run the example of VAL_KEYS_PRESENT."""
    # VAL: VAL_KEYS_PRESENT(config, ("model", "num_gpus"))
    check.keys_present(config, ("model", "num_gpus"), at=_AT[3])


# Where each check above is written: by spec and document line, what the check expects
# and the label of each value its failure message shows.
_AT = check.sites(
    "design/golden.md",
    {
        "Golden.check": {
            3: ('config to hold every key of ("model", "num_gpus")', "missing"),
        },
    },
)
