# Golden rendering of the AST_POSTCONDITION example, checked by tests/test_patterns.py.
# Regenerate with DD_UPDATE_GOLDEN=1 after a deliberate template change.

import reprlib


def check(offload_ranks):
    """Run the example of AST_POSTCONDITION."""
    # AST: AST_POSTCONDITION(len(offload_ranks) > 0)
    if not (len(offload_ranks) > 0):
        raise AssertionError(
            "AST_POSTCONDITION violated in Golden.check (design/golden.md:3): expected "
            f"len(offload_ranks) > 0 (where offload_ranks={reprlib.repr(offload_ranks)})"
        )
