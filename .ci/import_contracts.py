"""An import-linter contract type: no import cycles between modules, function-level imports included.

import-linter's own `acyclic_siblings` squashes each package into one node, so it misses a cycle between a package's
`__init__` and its own modules (`injector` importing `injector.runner.loop`, which imports `__version__` from
`injector`). This contract looks at every module of the graph grimp builds, which holds every import statement
wherever it sits (module level, inside functions, under `if TYPE_CHECKING:`), and fails on each strongly connected
component of more than one module, printing one concrete cycle per component with the lines that form it.

Used from pyproject.toml (`[tool.importlinter]`); run it from the repository root with
`PYTHONPATH=.ci lint-imports`.
"""
from __future__ import annotations

from collections import deque

import grimp
from importlinter.application import output
from importlinter.domain import fields
from importlinter.domain.contract import Contract, ContractCheck


class AcyclicModulesContract(Contract):
    """Contract options: `containers`, the packages whose modules must not import each other in a cycle."""

    type_name = "acyclic_modules"

    containers = fields.ListField(subfield=fields.StringField())

    def check(self, graph: grimp.ImportGraph, verbose: bool) -> ContractCheck:
        containers = list(self.containers)  # type: ignore[call-overload]
        modules = sorted(m for m in graph.modules
                         if any(m == c or m.startswith(c + ".") for c in containers))
        components = [component for component in _components(graph, modules) if len(component) > 1]
        details = []
        for component in components:
            cycle = _one_cycle(graph, component)
            details.append((component, [(importer, imported, _lines(graph, importer, imported))
                                        for importer, imported in zip(cycle, cycle[1:] + cycle[:1])]))
        return ContractCheck(kept=not components, metadata={"cycles": details})

    def render_broken_contract(self, check: ContractCheck) -> None:
        for number, (component, cycle) in enumerate(check.metadata["cycles"], 1):
            output.print_error(f"Cycle {number} (among {', '.join(component)}), e.g.: "
                               + " -> ".join([cycle[0][0], *(imported for _, imported, _ in cycle)]))
            for importer, imported, lines in cycle:
                output.indent_cursor()
                output.print_error(f"{importer} -> {imported} ({lines})", bold=False)
            output.new_line()


def _components(graph: grimp.ImportGraph, modules: list[str]) -> list[list[str]]:
    """Tarjan's strongly connected components over `modules`, iteratively (no recursion limit)."""
    inside = set(modules)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in modules:
        if root in index:
            continue
        work = [(root, iter(sorted(graph.find_modules_directly_imported_by(root) & inside)))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, successors = work[-1]
            for successor in successors:
                if successor not in index:
                    index[successor] = low[successor] = len(index)
                    stack.append(successor)
                    on_stack.add(successor)
                    work.append((successor, iter(sorted(graph.find_modules_directly_imported_by(successor) & inside))))
                    break
                if successor in on_stack:
                    low[node] = min(low[node], index[successor])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    found.append(sorted(component))
    return sorted(found)


def _one_cycle(graph: grimp.ImportGraph, component: list[str]) -> list[str]:
    """A shortest cycle through the component's first module (breadth-first inside the component)."""
    start, inside = component[0], set(component)
    came_from: dict[str, str] = {}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        for successor in sorted(graph.find_modules_directly_imported_by(node) & inside):
            if successor == start:
                path = [node]
                while path[-1] != start:
                    path.append(came_from[path[-1]])
                return path[::-1]
            if successor not in came_from:
                came_from[successor] = node
                queue.append(successor)
    raise AssertionError(f"{start} is in a strongly connected component but on no cycle")


def _lines(graph: grimp.ImportGraph, importer: str, imported: str) -> str:
    details = graph.get_import_details(importer=importer, imported=imported)
    return "; ".join(f"l.{d['line_number']}: {d['line_contents']}" for d in details) or "an import"
