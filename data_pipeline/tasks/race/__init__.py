"""RACE: examples (the released folder layout) and features (packing)."""
