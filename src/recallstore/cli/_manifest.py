"""``recallstore events manifest``: check or regenerate the event manifest and its docs."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from recallstore.cli._errors import EXIT_FAILED, CliError


def run_manifest(args: argparse.Namespace) -> int:
    """``recallstore events manifest --check|--write``: the manifest and docs/events.md."""
    from recallstore.events.manifest import (
        check_events_doc,
        check_manifest,
        write_events_doc,
        write_manifest,
    )

    manifest, docs = Path(args.manifest), Path(args.docs)
    if args.write:
        write_manifest(manifest)
        docs.parent.mkdir(parents=True, exist_ok=True)
        write_events_doc(docs)
        print(f"wrote {manifest} and {docs}")
        return 0
    differences = check_manifest(manifest) + check_events_doc(docs)
    if not differences:
        print(f"{manifest} and {docs} are up to date")
        return 0
    for difference in differences:
        print(f"  {difference}", file=sys.stderr)
    raise CliError(
        f"the event manifest is out of date ({len(differences)} differences); "
        "regenerate it with 'recallstore events manifest --write'",
        EXIT_FAILED,
    )
