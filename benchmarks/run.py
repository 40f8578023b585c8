"""Run every benchmark script in this folder, one after another, and print their tables.

    .venv/bin/python benchmarks/run.py [--quick | --million]

The store benchmark runs at 10,000 and 100,000 records; ``--quick`` at 10,000 only,
``--million`` at 1,000,000 as well (about 10 more minutes; ``live_search.py`` adds its
1M store, about 5 more); ``live_workload.py`` runs at 100k and 1M unless ``--quick``, as does
``postgres_scale.py`` (its own pgvector server; its 1M-and-10M run is by hand).
Scripts that need data which is absent skip themselves and exit 0. Exit status is
non-zero if any script failed. Scripts in :data:`ON_REQUEST` time a file built
beforehand, from one checkout and then another, and are not run here.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ORDER = ["locomo_recall.py", "store_bench.py"]
QUICK_ARGUMENTS = {
    "store_bench.py": ["--records", "10000", "--queries", "20"],
    "delete_bench.py": ["--records", "10000"],
    "write_cost.py": ["--records", "10000"],
    "semantic_bench.py": ["--records", "10000", "--queries", "50", "--writes", "200"],
    "postgres_processes.py": ["--records", "5000", "--users", "50", "--seconds", "10"],
    "live_search.py": ["--records", "20000", "--rounds", "50"],
    "live_workload.py": ["--sizes", "20000", "--rounds", "50"],
    "postgres_scale.py": ["--quick"],
    "broad_search.py": ["--sizes", "20000", "100000", "--queries", "30"],
    "postgres_round_trips.py": ["--records", "10000", "--users", "100", "--queries", "50"],
    "file_size.py": ["--records", "10000"],
    "hybrid_scope_curve.py": [
        *("--sizes", "100", "1000", "5000", "20000", "--others", "5000"),
        *("--queries", "100", "--rounds", "2", "--pool", "500"),
    ],
}
ON_REQUEST = {"listing_cost.py", "search_side.py"}
"""Run by hand on a given file (their docstrings say how), to compare two checkouts."""
MILLION_ARGUMENTS = {
    "store_bench.py": ["--records", "10000", "100000", "1000000"],
    "delete_bench.py": ["--records", "100000", "1000000"],
    "live_search.py": ["--engine", "1000000"],
    "live_workload.py": ["--sizes", "100000,1000000", "--rounds", "300"],
}


def scripts() -> list[str]:
    """The known scripts first, then any other ``*.py`` here (not run.py or ``_*.py``)."""
    others = sorted(
        path.name
        for path in HERE.glob("*.py")
        if path.name not in {*ORDER, *ON_REQUEST, "run.py"} and not path.name.startswith("_")
    )
    return [name for name in ORDER if (HERE / name).is_file()] + others


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller, faster runs")
    parser.add_argument(
        "--million", action="store_true", help="the store benchmark at 1M records too"
    )
    args = parser.parse_args(argv)
    failed = []
    for script in scripts():
        extra = QUICK_ARGUMENTS.get(script, []) if args.quick else []
        if args.million:
            extra = MILLION_ARGUMENTS.get(script, extra)
        command = [sys.executable, str(HERE / script), *extra]
        print(f"\n=== {script} {' '.join(command[2:])}".rstrip(), flush=True)
        started = time.perf_counter()
        result = subprocess.run(command, check=False)
        print(f"=== {script}: exit {result.returncode} in {time.perf_counter() - started:.1f} s")
        if result.returncode != 0:
            failed.append(script)
    if failed:
        print(f"failed: {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
