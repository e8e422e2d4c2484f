"""FrozenLake and Sokoban as text games: move parsing, rules, rewards, generators, solvers, offline data, configs."""

from __future__ import annotations

import importlib.util
import json
import random
import sys
from pathlib import Path

import pytest

from archer.config import ConfigError
from archer.data.offline import load_offline_trajectories
from archer.data.trajectory_file import TrajectoryFileError
from archer.envs.checker import check_env
from archer.envs.grid_games.config import FrozenLakeEnvConfig, SokobanEnvConfig
from archer.envs.grid_games.frozen_lake import FrozenLakeEnv, generate_map, optimal_success, shortest_path
from archer.envs.grid_games.frozen_lake import move_values as lake_move_values
from archer.envs.grid_games.grid import DIRECTIONS, grid_state, parse_direction, shortest_moves
from archer.envs.grid_games.sokoban import SokobanEnv
from archer.envs.grid_games.sokoban import move_values as room_move_values
from archer.envs.grid_games.sokoban_rooms import SokobanRoom, generate_room, solve
from archer.envs.registry import make_env
from archer.models.templates import get_template
from tests.conftest import compose_run

needs_gymnasium = pytest.mark.skipif(
    importlib.util.find_spec("gymnasium") is None, reason="FrozenLake needs the grid extra: pip install -e '.[grid]'"
)


def random_mover(seed: int):
    rng = random.Random(seed)
    return lambda observations: [rng.choice([*DIRECTIONS, "jump"]) for _ in observations]


def play_solver(env, game_ids: list[int]) -> list[tuple[float, bool, int]]:
    """Play ``game_ids`` with the env's BFS solver; (return, success, turns) per game."""
    env.reset(game_ids=game_ids)
    returns, outcome = [0.0] * len(game_ids), [None] * len(game_ids)
    while any(env.active):
        moves = [env.solver_move(slot) if alive else None for slot, alive in enumerate(env.active)]
        for slot, result in enumerate(env.step(moves)):
            if result is not None:
                returns[slot] += result.reward
                if result.done:
                    outcome[slot] = (returns[slot], result.info["success"], env.turns(slot))
    return outcome


# ---- move parsing ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("utterance", "move"),
    [
        ("left", "left"),
        ("Up", "up"),
        ("move left", "left"),
        ("LEFT.", "left"),
        ("<answer>Right || Up</answer>", "right"),
        ("I go down now", "down"),
        ("leftover upward", None),
        ("", None),
        ("jump", None),
    ],
)
def test_parse_direction_finds_the_first_move_word(utterance: str, move: str | None) -> None:
    assert parse_direction(utterance) == move


def test_shortest_moves_searches_breadth_first_in_the_order_moves_are_given() -> None:
    # Numbers 0..9; from n, "+1" to n + 1 and "x2" to 2n. From 1 to 6: +1 +1 x2 (1, 2, 3, 6) and x2 +1 x2
    # (1, 2, 3, 6) both take three moves; +1 is tried first, so the first path wins.
    def moves(n: int) -> list[tuple[str, int]]:
        return [(move, m) for move, m in (("+1", n + 1), ("x2", 2 * n)) if m <= 9]

    assert shortest_moves(1, lambda n: n == 6, moves) == ["+1", "+1", "x2"]
    assert shortest_moves(6, lambda n: n == 6, moves) == []
    assert shortest_moves(7, lambda n: n == 6, moves) is None  # 7, 8, 9: never back to 6
    # Expanding 1 and 2 sees four distinct states (1, 2, 3, 4): over a bound of 3, the search stops before 6.
    assert shortest_moves(1, lambda n: n == 6, moves, max_states=3) is None
    assert shortest_moves(1, lambda n: n == 6, moves, key=lambda n: n % 3) is None  # 6 looks like 3, seen before


# ---- FrozenLake -------------------------------------------------------------------------------------------------


def test_frozen_lake_maps_are_seeded_and_solvable_within_the_turn_limit() -> None:
    for game_id in range(200):
        desc = generate_map(game_id, 4, 0.8, 10)
        assert sum(row.count("S") for row in desc) == 1 and sum(row.count("G") for row in desc) == 1
        start = next((r, c) for r, row in enumerate(desc) for c, ch in enumerate(row) if ch == "S")
        path = shortest_path(desc, start)
        assert path is not None and 1 <= len(path) <= 10
    assert generate_map.__wrapped__(7, 4, 0.8, 10) == generate_map(7, 4, 0.8, 10)


@needs_gymnasium
def test_frozen_lake_observation_reward_and_invalid_action() -> None:
    env = FrozenLakeEnv(batch_size=1, is_slippery=False, seed=0, invalid_action_penalty=-0.1)
    (first,) = env.reset(game_ids=[0])
    # Map 0 (rows of S start, F ice, H hole, G goal) and its rendering: the player P on the start cell.
    assert env.map(0) == ("HFFF", "FFFH", "FSFG", "FFFH")
    assert first.endswith("Recent moves: none\nTurns left: 10\nGrid:\nO _ _ _\n_ _ _ O\n_ P _ G\n_ _ _ O\n")
    assert first.startswith("FrozenLake: walk from your position P to the goal G")
    assert "slippery" not in first and "Legend: P player, _ frozen ice, O hole, G goal" in first

    (jump,) = env.step(["jump!"])
    assert (jump.reward, jump.terminated, jump.truncated) == (-0.1, False, False)
    assert jump.info["invalid_action"] and jump.info["move"] == "" and env.position(0) == (2, 1)
    assert "Recent moves: invalid\nTurns left: 9" in jump.observation

    (moved,) = env.step(["Move RIGHT."])
    (goal,) = env.step(["right"])
    assert moved.reward == 0.0 and not moved.info["invalid_action"] and moved.info["move"] == "right"
    assert (goal.reward, goal.terminated, goal.info["success"]) == (1.0, True, True)
    assert "Recent moves: invalid, right (moved), right (moved)" in goal.observation
    assert goal.observation.endswith("_ _ √\n_ _ _ O\n")


@needs_gymnasium
def test_frozen_lake_hole_ends_the_game_and_turn_limit_truncates() -> None:
    env = FrozenLakeEnv(batch_size=2, max_turns=3, is_slippery=False, seed=0)
    env.reset(game_ids=[0, 0])
    # From (2, 1): up to (1, 1), up to (0, 1), left into the hole at (0, 0).
    results = [env.step(["up", "up"]), env.step(["up", "left"])]
    (hole, edge) = env.step(["left", "left"])
    assert (hole.reward, hole.terminated, hole.truncated, hole.info["success"]) == (0.0, True, False, False)
    assert "X _ _ _" in hole.observation and "fell into a hole" in hole.observation
    assert edge.truncated and not edge.terminated and "Turns left: 0" in edge.observation
    assert all(not r.done for step in results for r in step)


@needs_gymnasium
def test_frozen_lake_bfs_solver_wins_every_non_slippery_game() -> None:
    env = FrozenLakeEnv(batch_size=16, is_slippery=False, seed=0)
    for start in range(0, 64, 16):
        outcomes = play_solver(env, list(range(start, start + 16)))
        assert all(success and ret == 1.0 for ret, success, _ in outcomes)


@needs_gymnasium
def test_frozen_lake_slips_repeat_for_a_seed_and_pass_the_contract() -> None:
    def play(seed: int) -> list[str]:
        env = FrozenLakeEnv(batch_size=8, seed=seed)
        env.reset()
        return [r.observation for r in env.step(["down"] * 8)]

    assert play(3) == play(3)
    env = FrozenLakeEnv(batch_size=8, seed=1)
    env.reset(game_ids=list(range(8)))
    assert any("slipped" in r.observation for _ in range(3) for r in env.step(["down"] * 8) if r is not None)
    check_env(FrozenLakeEnv(batch_size=6, seed=0), act=random_mover(0))


def test_frozen_lake_needs_gymnasium_with_a_clear_message(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "gymnasium.envs.toy_text.frozen_lake", None)
    with pytest.raises(ImportError, match=r"pip install -e '\.\[grid\]'"):
        FrozenLakeEnv(batch_size=1)


# ---- Sokoban ------------------------------------------------------------------------------------------------------


def room_from(rows: list[str]) -> SokobanRoom:
    """A room from text: # wall, . floor, T target, B box, * box on target, P player, S player on target."""
    cells = {(r, c): ch for r, row in enumerate(rows) for c, ch in enumerate(row)}
    return SokobanRoom(
        height=len(rows),
        width=len(rows[0]),
        walls=frozenset(cell for cell, ch in cells.items() if ch == "#"),
        targets=frozenset(cell for cell, ch in cells.items() if ch in "T*S"),
        boxes=frozenset(cell for cell, ch in cells.items() if ch in "B*"),
        player=next(cell for cell, ch in cells.items() if ch in "PS"),
    )


def test_sokoban_push_rule_and_rendering() -> None:
    room = room_from(["######", "#P.B.#", "#.BB.#", "#T.BT#", "#....#", "######"])
    assert room.push("left") == (room, "blocked")  # a wall
    walked, note = room.push("right")
    assert note == "moved" and walked.player == (1, 2) and walked.boxes == room.boxes
    pushed, note = walked.push("right")
    assert note == "pushed a box" and pushed.player == (1, 3) and (1, 4) in pushed.boxes and (1, 3) not in pushed.boxes
    assert pushed.push("right") == (pushed, "blocked")  # the box would go into the wall
    assert pushed.push("down") == (pushed, "blocked")  # two boxes in a row: (2, 3) and (3, 3)

    env = SokobanEnv(batch_size=1, seed=0)
    env.reset(game_ids=[0])
    env._rooms[0] = room_from(["######", "#*..S#", "#.B..#", "#....#", "#T...#", "######"])  # a hand-made position
    assert env.render(0).splitlines()[1:3] == ["# √ _ _ S #", "# _ X _ _ #"]
    assert env.render(0).splitlines()[4] == "# O _ _ _ #"


@pytest.mark.parametrize(
    ("rows", "reward", "on_target", "solved"),
    [
        # A box pushed off its target: -0.1 step cost - 1 = -1.1.
        (["######", "#....#", "#P*..#", "#....#", "#..BT#", "######"], -1.1, 0, False),
        # A box pushed onto a target, another still off: -0.1 + 1 = 0.9.
        (["######", "#....#", "#PBT.#", "#....#", "#.BT.#", "######"], 0.9, 1, False),
        # The last box onto its target: -0.1 + 1 + 10 = 10.9.
        (["######", "#....#", "#PBT.#", "#....#", "#..*.#", "######"], 10.9, 2, True),
    ],
)
def test_sokoban_rewards_are_gym_sokobans(rows: list[str], reward: float, on_target: int, solved: bool) -> None:
    env = SokobanEnv(batch_size=1, seed=0)
    env.reset(game_ids=[0])
    env._rooms[0] = room_from(rows)  # a hand-made position in place of the generated room
    (result,) = env.step(["push right"])
    assert result.reward == pytest.approx(reward)
    assert (result.info["boxes_on_target"], result.terminated, result.info["success"]) == (on_target, solved, solved)


def test_sokoban_invalid_action_costs_the_step_and_the_penalty() -> None:
    env = SokobanEnv(batch_size=1, seed=0, invalid_action_penalty=-0.5)
    (first,) = env.reset(game_ids=[0])
    (jump,) = env.step(["jump"])
    # -0.1 every turn pays, -0.5 for naming no move; the board is unchanged.
    assert jump.reward == pytest.approx(-0.6) and jump.info["invalid_action"] and not jump.done
    assert jump.observation.split("Grid:")[1] == first.split("Grid:")[1]


def test_sokoban_rooms_are_seeded_and_solvable_within_the_turn_limit() -> None:
    lengths = []
    for game_id in range(150):
        room = generate_room(game_id, 6, 6, 1, 10)
        moves = solve(room)
        assert moves is not None and 1 <= len(moves) <= 10 and not room.solved
        lengths.append(len(moves))
    assert generate_room.__wrapped__(3, 6, 6, 1, 10) == generate_room(3, 6, 6, 1, 10)
    assert len(set(lengths)) >= 5  # not a single trivial kind of room
    two = generate_room(5, 7, 7, 2, 12)
    assert len(two.boxes) == 2 and len(solve(two)) <= 12


def test_sokoban_bfs_solver_wins_every_game_with_the_expected_return() -> None:
    env = SokobanEnv(batch_size=32, seed=0)
    outcomes = play_solver(env, list(range(32)))
    for ret, success, turns in outcomes:
        # n moves: n step costs of 0.1, +1 for the box, +10 for the solve.
        assert success and ret == pytest.approx(11 - 0.1 * turns)
    check_env(SokobanEnv(batch_size=5, seed=0), act=random_mover(1))


@needs_gymnasium
def test_grid_corpus_is_deterministic_and_shows_the_observation_format() -> None:
    for env in (FrozenLakeEnv(batch_size=2, seed=5), SokobanEnv(batch_size=2, seed=5)):
        corpus = env.corpus()
        assert corpus == env.copy(seed=9).corpus()
        assert any("Recent moves: invalid" in text for text in corpus)
        assert all("Grid:\n" in text for text in corpus)


@needs_gymnasium
def test_an_env_built_from_its_config_and_its_copies_keep_every_setting() -> None:
    lake = FrozenLakeEnvConfig(
        batch_size=3,
        max_turns=7,
        history_length=1,
        invalid_action_penalty=-0.5,
        size=5,
        frozen_prob=0.7,
        is_slippery=False,
        num_maps=11,
    )
    room = SokobanEnvConfig(
        batch_size=3,
        max_turns=9,
        history_length=2,
        invalid_action_penalty=-0.2,
        height=7,
        width=8,
        num_boxes=2,
        num_rooms=13,
    )
    for cfg in (lake, room):
        env = make_env(cfg, seed=0)
        copied = env.copy(batch_size=2, seed=1)
        assert len(env.SETTINGS) == 7 and env.batch_size == 3 and copied.batch_size == 2
        for name in env.SETTINGS:
            assert getattr(env, name) == getattr(copied, name) == getattr(cfg, name), name


# ---- every move's exact value (what a perfect critic scores) -------------------------------------------------------


def test_sokoban_move_values_one_push_from_solved() -> None:
    room = room_from(["#####", "#PBT#", "#####"])
    # One turn left: right pushes the box onto its target and solves the room, -0.1 + 1 + 10 = 10.9; the other moves
    # are blocked by walls and cost the turn, -0.1.
    assert room_move_values(room, 1) == pytest.approx({"left": -0.1, "down": -0.1, "right": 10.9, "up": -0.1})
    # Two turns: a blocked move, then the push: -0.1 + 10.9 = 10.8; discounted by 0.9: -0.1 + 0.9 * 10.9 = 9.71.
    assert room_move_values(room, 2)["up"] == pytest.approx(10.8)
    assert room_move_values(room, 2, gamma=0.9) == pytest.approx(
        {"left": 9.71, "down": 9.71, "right": 10.9, "up": 9.71}
    )


def test_sokoban_move_values_rank_a_push_that_makes_the_room_unsolvable_worst() -> None:
    # Player (3, 2) below the box (2, 2); the target (2, 3) is right of the box, so the box must be pushed right from
    # (2, 1).
    room = room_from(["#####", "#...#", "#.BT#", "#.P.#", "#####"])
    # Ten turns, undiscounted; a solution of n moves in all returns 11 - 0.1 n:
    #   left: (3, 1), up to (2, 1), push right: 3 moves, 10.7;
    #   down: blocked by the wall, then the same 3 moves: 4, 10.6;
    #   right: (3, 3), back along (3, 2), (3, 1), (2, 1), push: 5 moves, 10.5;
    #   up: pushes the box against the top wall, from where it only moves sideways and never reaches row 2: ten step
    #   costs, -1.0.
    assert room_move_values(room, 10) == pytest.approx({"left": 10.7, "down": 10.6, "right": 10.5, "up": -1.0})
    # Three turns: only left solves in time; the other three moves leave three step costs and nothing else.
    assert room_move_values(room, 3) == pytest.approx({"left": 10.7, "down": -0.3, "right": -0.3, "up": -0.3})
    # Discounted by 0.9: left is -0.1 - 0.9 * 0.1 + 0.81 * 10.9 = 8.639.
    assert room_move_values(room, 10, gamma=0.9)["left"] == pytest.approx(8.639)
    with pytest.raises(ValueError, match="turns_left"):
        room_move_values(room, 0)
    with pytest.raises(ValueError, match="solved"):
        room_move_values(room_from(["#####", "#P*.#", "#####"]), 3)


def test_sokoban_move_values_agree_with_the_solver_and_the_env() -> None:
    for game_id in range(8):
        room = generate_room(game_id, 6, 6, 1, 10)
        values = room_move_values(room, 10)
        # Undiscounted with one box: the best move and a shortest solution after it, 11 - 0.1 n in all.
        assert max(values.values()) == pytest.approx(11 - 0.1 * len(solve(room)))
        assert values[solve(room)[0]] == pytest.approx(max(values.values()))
    env = SokobanEnv(batch_size=2, seed=0)
    env.reset(game_ids=[4, 5])
    env.step(["left", "jump"])  # one turn played in each slot: nine left
    assert env.move_values(1, gamma=0.95) == room_move_values(env.room(1), 9, gamma=0.95)


@needs_gymnasium
def test_frozen_lake_move_values_by_hand() -> None:
    # One row: goal, start, hole. A slippery move goes the intended way or to either side, 1/3 each; on one row the
    # sideways moves of left and right (up, down) stay put, and up and down slip left or right.
    lake = ("GSH",)
    # One turn: left reaches G with 1/3; up and down slip left with 1/3; right reaches only the hole or stays.
    assert lake_move_values(lake, (0, 1), 1, True) == pytest.approx(
        {"left": 1 / 3, "down": 1 / 3, "right": 0, "up": 1 / 3}
    )
    # Two turns (V1(S) = 1/3 after staying): left 1/3 (1 + 1/3 + 1/3) = 5/9; up and down 1/3 (1 + 1/3 + 0) = 4/9;
    # right 1/3 (1/3 + 0 + 1/3) = 2/9.
    assert lake_move_values(lake, (0, 1), 2, True) == pytest.approx(
        {"left": 5 / 9, "down": 4 / 9, "right": 2 / 9, "up": 4 / 9}
    )
    # Discounted by 0.9, left: 1/3 now, or stay (2/3) and 0.9 x 1/3 a turn later: 1/3 + 0.2.
    assert lake_move_values(lake, (0, 1), 2, True, gamma=0.9)["left"] == pytest.approx(1 / 3 + 0.2)
    # Not slippery: left wins at once; up stays, then left wins with the second turn.
    assert lake_move_values(lake, (0, 1), 2, False) == pytest.approx({"left": 1, "down": 1, "right": 0, "up": 1})
    assert lake_move_values(lake, (0, 1), 1, False) == pytest.approx({"left": 1, "down": 0, "right": 0, "up": 0})
    # "SFG" from the start with three turns: right (or up, down: they slip right) 7/27 as optimal_success's test
    # works out; left stays, leaving V2(S) = 1/9.
    values = lake_move_values(("SFG",), (0, 0), 3, True)
    assert values == pytest.approx({"left": 1 / 9, "down": 7 / 27, "right": 7 / 27, "up": 7 / 27})
    assert max(values.values()) == pytest.approx(optimal_success(("SFG",), 3, True))
    for cell, turns, match in (
        ((0, 0), 1, "the goal"),
        ((0, 2), 1, "a hole"),
        ((0, 1), 0, "turns_left"),
        ((1, 0), 1, "off"),
    ):
        with pytest.raises(ValueError, match=match):
            lake_move_values(lake, cell, turns, True)


@needs_gymnasium
def test_frozen_lake_move_values_agree_with_optimal_success_and_the_env() -> None:
    for game_id in range(5):
        desc = generate_map(game_id, 4, 0.8, 10)
        start = next((r, c) for r, row in enumerate(desc) for c, ch in enumerate(row) if ch == "S")
        assert max(lake_move_values(desc, start, 10, True).values()) == pytest.approx(optimal_success(desc, 10, True))
    env = FrozenLakeEnv(batch_size=1, seed=0)
    env.reset(game_ids=[2])
    env.step(["jump"])
    assert env.move_values(0, 0.95) == lake_move_values(env.map(0), env.position(0), 9, True, 0.95)


# ---- offline data and configs ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", [pytest.param("bc_frozenlake", marks=needs_gymnasium), "bc_sokoban"])
def test_generated_grid_data_is_cached_and_mixes_solver_and_noise(name: str, tmp_path: Path) -> None:
    # A non-slippery lake, so that every noise-free FrozenLake episode wins.
    base = ["env.is_slippery=false"] if name == "bc_frozenlake" else []

    def run(*overrides: str):
        return compose_run(name, [*base, *overrides])

    cfg = run("data.generate_episodes=40", "env.data_epsilons=[0.0,1.0]")
    trajectories = load_offline_trajectories(cfg, tmp_path)
    assert len(trajectories) == 40
    solver = [t for t in trajectories if t.info["noise"] == 0.0]
    noisy = [t for t in trajectories if t.info["noise"] == 1.0]
    assert solver and noisy and all(t.success for t in solver)
    assert sum(t.success for t in noisy) < len(noisy)
    assert all(t.actions and set(t.actions) <= set(DIRECTIONS) for t in trajectories)
    (path,) = (tmp_path / "datasets").glob("*.json")
    again = load_offline_trajectories(cfg, tmp_path)
    assert [t.actions for t in again] == [t.actions for t in trajectories]

    # The file loads through data.path, and is refused for other observation settings or when malformed.
    assert len(load_offline_trajectories(run(f"data.path={path}"), tmp_path)) == 40
    with pytest.raises(TrajectoryFileError, match=r"env\.history_length=5 \(the file has 3\)"):
        load_offline_trajectories(run(f"data.path={path}", "env.history_length=5"), tmp_path)
    broken = json.loads(path.read_text())
    broken["episodes"][3]["rewards"].pop()
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(broken))
    with pytest.raises(TrajectoryFileError, match="episode 3"):
        load_offline_trajectories(run(f"data.path={bad}"), tmp_path)
    with pytest.raises(TrajectoryFileError, match="no dataset file"):
        load_offline_trajectories(run(f"data.path={tmp_path / 'none.json'}"), tmp_path)


@pytest.mark.parametrize(
    ("name", "override", "key"),
    [
        ("bc_frozenlake", "env.frozen_prob=0", "env.frozen_prob"),
        ("bc_frozenlake", "env.data_epsilons=[1.5]", "env.data_epsilons"),
        ("bc_frozenlake", "env.invalid_action_penalty=0.5", "env.invalid_action_penalty"),
        ("bc_sokoban", "env.num_boxes=8", "env.num_boxes"),
        ("bc_sokoban", "env.height=3", "env.height"),
    ],
)
def test_grid_config_errors_name_the_key(name: str, override: str, key: str) -> None:
    with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
        compose_run(name, [override])


@needs_gymnasium
def test_configs_build_their_environments() -> None:
    lake = make_env(compose_run("archer_frozenlake").env, seed=0)
    room = make_env(compose_run("archer_sokoban").env, seed=0)
    assert isinstance(lake, FrozenLakeEnv) and lake.is_slippery and lake.batch_size == 32
    assert isinstance(room, SokobanEnv) and room.num_boxes == 1 and room.max_turns == 10


def test_the_grid_state_template_puts_the_grid_first_and_drops_the_rules_and_legend() -> None:
    env = SokobanEnv(batch_size=1, max_turns=10, seed=0)
    observation = env.reset(game_ids=[0])[0]
    observation = env.step(["up"])[0].observation
    prompt = get_template("grid_state")(observation)
    lines = prompt.splitlines()
    rows = observation.partition("Grid:\n")[2].splitlines()
    assert lines == [
        "Grid:",
        *rows,
        "Recent moves: up" + observation.split("Recent moves: up")[1].split("\n")[0],
        "Turns left: 9",
    ]
    assert prompt.endswith("\n") and "Legend" not in prompt and "push" not in prompt.split("Recent")[0]
    # Every cell at the same position in every prompt: the grid's text starts the prompt, whatever the history.
    later = env.step(["left"])[0].observation
    assert get_template("grid_state")(later).startswith("Grid:\n") and len(rows) == 6
    assert grid_state("no grid here") == "no grid here"
    lake = FrozenLakeEnv(batch_size=1, max_turns=10, seed=0).reset(game_ids=[0])[0]
    assert grid_state(lake) == "Grid:\n" + lake.partition("Grid:\n")[2] + "Recent moves: none\nTurns left: 10\n"


def test_the_sokoban_configs_share_bc_sokobans_start_on_the_grid_state_prompt() -> None:
    bc = compose_run("bc_sokoban")
    cloning = (
        bc.algorithm.actor_lr,
        bc.algorithm.pack_episodes,
        bc.algorithm.num_iterations * bc.algorithm.steps_per_iter,
    )
    assert cloning == (3e-4, False, 12840) and bc.model.policy.template == "grid_state"
    for name in ("archer_sokoban", "grpo_sokoban", "gigpo_sokoban"):
        cfg = compose_run(name)
        assert cfg.pretrain is not None and cfg.model.policy.template == "grid_state", name
        pretrain = cfg.pretrain
        assert (
            pretrain.actor_lr,
            pretrain.pack_episodes,
            pretrain.num_iterations * pretrain.steps_per_iter,
        ) == cloning
        assert cfg.data.generate_episodes == bc.data.generate_episodes == 500, name
