"""Puts the repository root on ``sys.path``, so ``tests.store.kit_mutants`` imports."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
