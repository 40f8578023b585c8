"""Bundled ``MemoryStore`` backends."""
