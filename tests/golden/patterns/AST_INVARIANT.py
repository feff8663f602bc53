# Golden rendering of the AST_INVARIANT example, checked by tests/test_patterns.py.
# Regenerate with DD_UPDATE_GOLDEN=1 after a deliberate template change.

import reprlib


def check(self):
    """Run the example of AST_INVARIANT."""
    # AST: AST_INVARIANT(self.free_gpus.isdisjoint(self.busy_gpus))
    if not self.free_gpus.isdisjoint(self.busy_gpus):
        raise AssertionError(
            "AST_INVARIANT violated in Golden.check (design/golden.md:3): expected "
            "self.free_gpus.isdisjoint(self.busy_gpus) (where "
            f"self.free_gpus={reprlib.repr(self.free_gpus)}, "
            f"self.busy_gpus={reprlib.repr(self.busy_gpus)})"
        )
