# Golden rendering of the AST_PRECONDITION example, checked by tests/test_patterns.py.
# Regenerate with DD_UPDATE_GOLDEN=1 after a deliberate template change.

import reprlib


def check(ranks, gpus):
    """Run the example of AST_PRECONDITION."""
    # AST: AST_PRECONDITION(len(ranks) == len(gpus))
    if not (len(ranks) == len(gpus)):
        raise AssertionError(
            "AST_PRECONDITION violated in Golden.check (design/golden.md:3): expected len(ranks) "
            f"== len(gpus) (where ranks={reprlib.repr(ranks)}, gpus={reprlib.repr(gpus)})"
        )
