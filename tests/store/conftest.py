"""Makes ``kit_mutants`` (the deliberately broken backends) importable by the store tests."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
