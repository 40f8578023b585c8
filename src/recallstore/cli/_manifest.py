"""``recallstore events manifest``: check or regenerate the event manifest and its docs."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from recallstore._command.errors import EXIT_FAILED, CliError


def run_manifest(args: argparse.Namespace) -> int:
    """``recallstore events manifest --check|--write``: the manifest and docs/events.md."""
    from recallstore.events.manifest import WRITE_COMMAND, update_manifest

    manifest, docs = Path(args.manifest), Path(args.docs)
    differences = update_manifest(manifest, docs, write=args.write)
    if args.write:
        print(f"wrote {manifest} and {docs}")
        return 0
    if not differences:
        print(f"{manifest} and {docs} are up to date")
        return 0
    for difference in differences:
        print(f"  {difference}", file=sys.stderr)
    raise CliError(
        f"the event manifest is out of date ({len(differences)} differences); "
        f"regenerate it with '{WRITE_COMMAND}'",
        EXIT_FAILED,
    )
