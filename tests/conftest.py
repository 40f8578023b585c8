"""Snapshots go through recallstore's own pytest plugin, as they do in a user's project.

The plugin (``recallstore.testing.pytest_plugin``, loaded by its ``pytest11`` entry point)
gives the ``prompt_snapshot`` fixture: one readable text file per snapshot under the
top-level ``snapshots/`` folder, mirroring ``tests/``
(``snapshots/agent/test_prompt/test_manual_snapshot.md``), so a prompt change shows up in
review as a plain text diff. Snapshots no test uses fail the run (syrupy's default).
Update them with ``.venv/bin/pytest tests/agent --snapshot-update``.
"""
