"""The import graph of ``archer/``: no circles, and imports point down the layers DESIGN.md names.

Layers, lowest first: shared helpers (``errors``, ``utils``); ``envs``, ``config``, ``tracking``; ``models``,
``data``, ``distributed``; ``algorithms``, ``evaluation``, ``checkpointing``, ``critic_probe``; ``trainer``; ``cli``.
A module may import its own layer's modules and lower layers' modules, never a higher layer's; algorithms also know
nothing of environments. Imports inside functions and under ``TYPE_CHECKING`` count: a lazy import hides a circle,
it does not remove it.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "archer"
RANKS = {
    "errors": 0,
    "utils": 0,
    "envs": 1,
    "config": 1,
    "kalm": 1,  # self-contained pipeline: imports only errors, utils and its own modules; config registers its schema
    "tracking": 1,
    "models": 2,
    "data": 2,
    "distributed": 2,
    "algorithms": 3,
    "evaluation": 3,
    "checkpointing": 3,
    "critic_probe": 3,
    "trainer": 4,
    "cli": 5,
}


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(path: Path, modules: set[str]) -> set[str]:
    """The ``archer`` modules ``path`` imports anywhere in its body (``from a.b import c`` names ``a.b.c`` when it
    is a module, else ``a.b``)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0 and node.module.startswith("archer"):
            for alias in node.names:
                name = f"{node.module}.{alias.name}"
                found.add(name if name in modules else node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name.startswith("archer."))
    return found & modules


def import_graph() -> dict[str, set[str]]:
    paths = {module_name(path): path for path in PACKAGE.rglob("*.py")}
    modules = set(paths)
    return {name: imported_modules(path, modules) - {name} for name, path in paths.items()}


def layer(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else None


def find_circle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import circle of ``graph`` between modules (package ``__init__`` files left out), or ``None``."""
    done: set[str] = set()
    for start in sorted(graph):
        stack = [(start, iter(sorted(graph[start])))]
        path, on_path = [start], {start}
        while stack:
            node, children = stack[-1]
            child = next(children, None)
            if child is None:
                stack.pop()
                on_path.discard(path.pop())
                done.add(node)
            elif child in on_path:
                return path[path.index(child) :] + [child]
            elif child not in done and not PACKAGE.joinpath(*child.split(".")[1:], "__init__.py").exists():
                stack.append((child, iter(sorted(graph[child]))))
                path.append(child)
                on_path.add(child)
    return None


def test_every_layer_of_the_package_is_ranked() -> None:
    assert {layer(name) for name in import_graph()} - {None} == set(RANKS)


def test_the_package_has_no_import_circle() -> None:
    assert find_circle(import_graph()) is None


def test_imports_point_down_the_layers() -> None:
    upward = []
    for module, targets in import_graph().items():
        for target in targets:
            own, other = layer(module), layer(target)
            if own is None or other is None or own == other:
                continue
            if RANKS[other] > RANKS[own] or (own == "algorithms" and other == "envs"):
                upward.append(f"{module} -> {target}")
    assert upward == []


def test_the_circle_finder_on_hand_made_graphs() -> None:
    circle = {"archer.data.a": {"archer.envs.b"}, "archer.envs.b": {"archer.data.a"}}
    assert find_circle(circle) == ["archer.data.a", "archer.envs.b", "archer.data.a"]
    assert find_circle({"archer.data.a": {"archer.envs.b"}, "archer.envs.b": set()}) is None


@pytest.mark.parametrize("module", ["archer.envs.guess_my_city", "archer.models.turn_encoder"])
def test_the_two_former_circles_are_gone(module: str) -> None:
    graph = import_graph()
    assert not any(module in graph[target] for target in graph[module])


def test_algorithms_do_not_import_accelerate() -> None:
    """Algorithms reach the accelerator through ``accumulation.Backend``; only the layers below and above import it."""
    importers = []
    for path in sorted((PACKAGE / "algorithms").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            else:
                continue
            importers += [path.name for name in names if name.split(".")[0] == "accelerate"]
    assert importers == []
