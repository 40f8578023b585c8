"""The import circles of a package, as ``tests/tooling/test_layout.py`` counts them.

Two kinds: a module that imports, directly or not, a module that imports it back; and
two children of one package (modules or sub-packages) that each import, through any of
their modules, the other. Imports inside functions count (they still make import order
matter); imports under ``if TYPE_CHECKING:`` do not, since they never run.

Run as a script (``python tests/tooling/import_circles.py recallstore``) it prints one
circle a line and exits 1 when there is any: the layout tests run it that way on a copy
of the package, found first on ``PYTHONPATH``.
"""

from __future__ import annotations

import itertools
import sys

import grimp


def import_circles(package: str) -> list[str]:
    """Every circle in ``package``, one line each (``a -> b -> a``); empty when none."""
    # No cache: a copy of the package and the real tree must never share one.
    graph = grimp.build_graph(package, exclude_type_checking_imports=True, cache_dir=None)
    circles: list[str] = []
    for module in sorted(graph.modules):
        for imported in sorted(graph.find_modules_directly_imported_by(module)):
            chain = graph.find_shortest_chain(importer=imported, imported=module)
            if chain is not None:
                circles.append(" -> ".join((module, *chain)))
    for parent in sorted(m for m in graph.modules if graph.find_children(m)):
        for one, other in itertools.combinations(sorted(graph.find_children(parent)), 2):
            there = graph.find_shortest_chains(importer=one, imported=other, as_packages=True)
            back = graph.find_shortest_chains(importer=other, imported=one, as_packages=True)
            if there and back:
                circles.append(
                    f"{one} <-> {other}: {' -> '.join(min(there))}; {' -> '.join(min(back))}"
                )
    return circles


if __name__ == "__main__":
    found = import_circles(sys.argv[1] if len(sys.argv) > 1 else "recallstore")
    print("\n".join(found))
    sys.exit(1 if found else 0)
