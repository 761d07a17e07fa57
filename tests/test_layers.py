"""The package's imports point down only, and no module imports itself back through others.

Every import is counted, the ones written inside functions included (they run too, only
later); those under ``if TYPE_CHECKING:`` are not (they never run). Layers, lowest first:

    the contract      modelwire.message, modelwire.event (and the helpers they stand on)
    the kits          modelwire.adapters, modelwire.formatters
    the protocols     modelwire.protocols (a package per wire protocol, the registry)
    the models        modelwire.models (transport, config, capabilities: the network I/O)
    the rest          agent, cassettes, serve, testing, integrations, conform, the CLI
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "modelwire"

# The top-level names of each layer; a module may import its own layer or any below it.
LAYERS = [
    {"_version", "_ids", "_secrets", "_sync", "_record", "errors", "sources"},
    {"message", "event"},
    {"adapters", "formatters"},
    {"protocols", "cost", "telemetry"},
    {"models"},
]


def _modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = ["modelwire", *path.relative_to(PACKAGE).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The modelwire modules ``name`` imports, at any depth of its code."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    typing_only = {
        id(node)
        for guard in ast.walk(tree)
        if isinstance(guard, ast.If) and "TYPE_CHECKING" in ast.unparse(guard.test)
        for stmt in guard.body
        for node in ast.walk(stmt)
    }
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    out = set()
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            out |= {alias.name for alias in node.names if alias.name in modules}
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            source = ".".join(base + ([node.module] if node.module else []))
            for alias in node.names:
                target = f"{source}.{alias.name}"
                out.add(target if target in modules else source)
    return {m for m in out if m in modules and m != name}


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: _imports(name, path, modules) for name, path in modules.items()}


def _layer(module: str) -> int:
    top = module.split(".")[1] if "." in module else ""
    return next((i for i, names in enumerate(LAYERS) if top in names), len(LAYERS))


def test_imports_point_down_only():
    upward = [
        f"{module} imports {target}"
        for module, targets in sorted(_graph().items())
        for target in sorted(targets)
        if _layer(target) > _layer(module)
    ]
    assert upward == [], "\n".join(upward)


def test_no_module_imports_itself_back():
    graph = _graph()
    cycles = []
    state: dict[str, int] = {}  # 1: on the path being walked, 2: done

    def walk(module: str, path: list[str]) -> None:
        state[module] = 1
        for target in sorted(graph[module]):
            if state.get(target) == 1:
                cycles.append(" -> ".join([*path[path.index(target) :], target]))
            elif target not in state:
                walk(target, [*path, target])
        state[module] = 2

    for module in sorted(graph):
        if module not in state:
            walk(module, [module])
    assert cycles == [], "\n".join(cycles)


def test_the_walk_sees_imports_inside_functions():
    """The graph is read from the code: a function-level import is an edge."""
    graph = _graph()
    assert "modelwire.protocols.anthropic._body" in graph["modelwire.protocols.anthropic"]  # imported in methods
    assert "modelwire.formatters._toolids" in graph["modelwire.formatters._common"]
