"""Fix builders and the edit model: byte-range replacements, knowing nothing of the engine."""
