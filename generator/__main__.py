"""`python -m generator` is the same program as the `dd` console script."""

from generator.cli import main

main()
