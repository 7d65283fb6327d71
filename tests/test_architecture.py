"""The package's import graph (docs: /work/shared/STYLE.md, "one direction of flow").

Read from the source with ``ast``, not by importing: every ``import`` counts, at module level or inside a
function (a lazy import hides a circle, it does not remove it). Imports under ``if TYPE_CHECKING:`` never run
and are left out. Importing ``a.b.c`` is an edge to ``a.b.c`` only, not to the packages above it: otherwise every
``__init__`` that re-exports its submodules would be a circle with each of them.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.paths import REPO

try:
    import tomllib
except ImportError:  # Python 3.10
    import tomli as tomllib

PACKAGE = "tops_advisor"
ROOT = REPO / PACKAGE

# The lower layers (workload, catalog, roofline, costs, LLM builder, recommender) and the higher ones they must never
# reach, directly or through anything they import.
LOWER = ("workload", "catalog", "roofline", "costs", "recommend", "llm")
HIGHER = ("counting", "probe", "validate", "cli", "render")

def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(tree: ast.AST):
    """Every Import/ImportFrom node, skipping ``if TYPE_CHECKING:`` bodies."""
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.If) and _is_type_checking(node):
            stack.extend(node.orelse)
            continue
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        stack.extend(ast.iter_child_nodes(node))


def _targets(node: ast.Import | ast.ImportFrom, module: str, is_package: bool, modules: set[str]) -> set[str]:
    if isinstance(node, ast.Import):
        return {a.name for a in node.names}
    if node.level:
        base_parts = module.split(".") if is_package else module.split(".")[:-1]
        base_parts = base_parts[: len(base_parts) - (node.level - 1)]
        base = ".".join(base_parts + ([node.module] if node.module else []))
    else:
        base = node.module or ""
    out = set()
    for alias in node.names:
        sub = f"{base}.{alias.name}"
        out.add(sub if sub in modules else base)
    return out


def _all_imports() -> dict[str, set[str]]:
    """Module -> every module name it imports (the package's and outside ones)."""
    files = {_module_name(p): p for p in ROOT.rglob("*.py")}
    modules = set(files)
    out: dict[str, set[str]] = {}
    for name, path in files.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        edges: set[str] = set()
        for node in _imports(tree):
            edges |= _targets(node, name, path.name == "__init__.py", modules)
        out[name] = edges - {name}
    return out


def import_graph() -> dict[str, set[str]]:
    """Module -> the package's modules it imports."""
    everything = _all_imports()
    return {m: {t for t in edges if t in everything} for m, edges in everything.items()}


def cycles(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[frozenset[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            scc = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                scc.add(w)
                if w == v:
                    break
            if len(scc) > 1:
                out.append(frozenset(scc))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def _in(module: str, layers: tuple[str, ...]) -> bool:
    return any(module == f"{PACKAGE}.{x}" or module.startswith(f"{PACKAGE}.{x}.") for x in layers)


def reachable(graph: dict[str, set[str]], start: str) -> set[str]:
    seen, todo = set(), [start]
    while todo:
        for w in graph.get(todo.pop(), ()):
            if w not in seen:
                seen.add(w)
                todo.append(w)
    return seen


def test_graph_sees_lazy_and_relative_imports():
    graph = import_graph()
    assert "tops_advisor.roofline" in graph["tops_advisor.llm.analysis"]  # imported inside a function
    assert "tops_advisor.llm.config" in graph["tops_advisor.llm.builder"]  # from .config import ...
    assert "tops_advisor.catalog" in graph["tops_advisor.llm.memory"]     # from ..catalog import ...
    assert "torch" in _all_imports()["tops_advisor.counting.counter"]     # outside imports are seen too


def test_cycle_finder_finds_a_planted_cycle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [frozenset("abc")]


def test_no_import_cycles():
    found = cycles(import_graph())
    assert not found, "import circles: " + "; ".join(" <-> ".join(sorted(c)) for c in found)


def test_lower_layers_never_reach_higher_ones():
    graph = import_graph()
    bad = {}
    for module in sorted(graph):
        if _in(module, LOWER):
            up = sorted(m for m in reachable(graph, module) if _in(m, HIGHER))
            if up:
                bad[module] = up
    assert not bad, "lower layers importing higher ones (directly or not): " + "; ".join(
        f"{m} -> {', '.join(up)}" for m, up in bad.items())


def test_lower_layers_never_import_torch():
    """Only counting and probe (and what runs them) import torch; the lower layers stay fast without it."""
    everything = _all_imports()
    graph = import_graph()
    bad = sorted(m for m in graph if _in(m, LOWER) and any(
        t == "torch" or t.startswith("torch.") for x in reachable(graph, m) | {m} for t in everything[x]))
    assert not bad, f"lower layers that import torch (directly or not): {', '.join(bad)}"


def test_fvcore_is_not_a_runtime_dependency():
    project = tomllib.loads((ROOT.parent / "pyproject.toml").read_text())["project"]
    assert not any(d.startswith("fvcore") for d in project["dependencies"])
    assert any(d.startswith("fvcore") for d in project["optional-dependencies"]["dev"])
    for path in ROOT.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            assert not any(n.split(".")[0] == "fvcore" for n in names), path
