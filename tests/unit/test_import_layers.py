"""The import graph of ``archer/``: no circles, and imports point down the layers of the design.

Layers, lowest first:

0. shared helpers: ``errors``, ``utils``, ``locking``;
1. ``config``, ``tracking``;
2. ``envs``' game-independent parts: the environment contract and checker, the oracle protocol, the question-game
   base, the seq2seq oracle, the reader of the games' facts files;
3. the game-independent data a game produces: trajectories, their file formats, rollout and scripted play
   (``data.trajectory``, ``data.trajectory_file``, ``data.json_records``, ``data.rollout``, ``data.scripted_play``);
4. the games: one package per game under ``envs/`` (each ranked here without being listed), their ``GameSpec``
   (``envs.spec``) and the registry of them all (``envs.registry``);
5. ``models``, the rest of ``data`` (replay buffer, offline dispatch), ``distributed``;
6. ``algorithms``, ``evaluation``, ``move_dependence``, ``checkpointing``, ``pretraining``;
7. ``trainer``, ``preflight``, ``phase_timing`` (which times a built trainer's phases) and ``check_env`` (the
   environment checker's command); 8. ``cli`` and ``serve_openenv`` (a game composed as ``cli`` composes it, served as
   an OpenEnv server).

The design's first layering put all of ``data`` above ``envs``; a game package holds its scripted players and
dataset generator, so the trajectory containers and the rollout loop they fill sit below the games and above the
environment contract.

A module belongs to the layer of the longest name in ``RANKS`` its name starts with (or to a game package). It may
import its own layer's modules and lower layers' modules, never a higher layer's; a game imports no other game
(what games share lives in layer 2); algorithms know nothing of environments. Imports inside functions and under
``TYPE_CHECKING`` count, and so do package ``__init__`` files: a lazy import hides a circle, it does not remove it.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "archer"
GAME_RANK = 4
RANKS = {
    "errors": 0,
    "utils": 0,
    "locking": 0,
    "config": 1,
    "kalm": 1,  # self-contained pipeline: imports only errors, utils and its own modules; config registers its schema
    "tracking": 1,
    "envs": 2,
    "data.trajectory": 3,
    "data.trajectory_file": 3,
    "data.json_records": 3,
    "data.rollout": 3,
    "data.scripted_play": 3,
    "envs.spec": GAME_RANK,
    "envs.registry": GAME_RANK,
    "models": 5,
    "data": 5,
    "distributed": 5,
    "algorithms": 6,
    "evaluation": 6,
    "move_dependence": 6,  # a diagnostic of the policy (models) on an environment's states (envs)
    "checkpointing": 6,
    "pretraining": 6,
    "trainer": 7,
    "phase_timing": 7,  # times a built trainer's phases (it never imports the trainer)
    "preflight": 7,
    "check_env": 7,  # the environment checker's command: the checker (envs) on env=external's target (a game)
    "cli": 8,
    "serve_openenv": 8,  # a command: composes a game's config as cli does and serves it as an OpenEnv server
}
GAMES = {path.parent.name for path in (PACKAGE / "envs").glob("*/__init__.py")}


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
    """The ``RANKS`` key (or ``envs.<game>``) ``module`` belongs to; None for ``archer`` itself."""
    parts = module.split(".")[1:]
    if len(parts) > 1 and parts[0] == "envs" and parts[1] in GAMES:
        return f"envs.{parts[1]}"
    for size in range(len(parts), 0, -1):
        if ".".join(parts[:size]) in RANKS:
            return ".".join(parts[:size])
    return parts[0] if parts else None


def rank(layer_name: str) -> int:
    return GAME_RANK if is_game(layer_name) else RANKS[layer_name]


def is_game(layer_name: str) -> bool:
    return layer_name.startswith("envs.") and layer_name[len("envs.") :] in GAMES


def find_circle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import circle of ``graph``, or ``None``."""
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
            elif child not in done:
                stack.append((child, iter(sorted(graph[child]))))
                path.append(child)
                on_path.add(child)
    return None


def test_every_layer_of_the_package_is_ranked() -> None:
    layers = {layer(name) for name in import_graph()} - {None}
    assert {name for name in layers if not is_game(name)} - set(RANKS) == set()
    assert GAMES == {"adventure", "external", "grid_games", "guess_my_city", "openenv", "twenty_questions", "webshop"}


def test_the_package_has_no_import_circle() -> None:
    assert find_circle(import_graph()) is None


def test_imports_point_down_the_layers() -> None:
    upward = []
    for module, targets in import_graph().items():
        for target in targets:
            own, other = layer(module), layer(target)
            if own is None or other is None or own == other:
                continue
            if (
                rank(other) > rank(own)
                or (is_game(own) and is_game(other))
                or (own == "algorithms" and other.split(".")[0] == "envs")
            ):
                upward.append(f"{module} -> {target}")
    assert upward == []


def test_the_layer_rules_on_hand_made_names() -> None:
    assert layer("archer.data.trajectory_file") == "data.trajectory_file"
    assert layer("archer.data.replay_buffer") == "data"
    assert layer("archer.envs.twenty_questions.oracle") == "envs.twenty_questions"
    assert layer("archer.envs.base") == "envs"
    assert rank(layer("archer.envs.webshop")) == GAME_RANK
    assert rank("data.rollout") < GAME_RANK < rank("data")


def test_the_circle_finder_on_hand_made_graphs() -> None:
    circle = {"archer.data.a": {"archer.envs.b"}, "archer.envs.b": {"archer.data.a"}}
    assert find_circle(circle) == ["archer.data.a", "archer.envs.b", "archer.data.a"]
    assert find_circle({"archer.data.a": {"archer.envs.b"}, "archer.envs.b": set()}) is None


@pytest.mark.parametrize("module", ["archer.envs.guess_my_city.env", "archer.models.turn_encoder"])
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
