"""Shared by the per-step checks: `steps/` is importable, so checks can share small helpers."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
