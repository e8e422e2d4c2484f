"""The method benchmark's tasks (scripts/benchmark_tasks.py) and their machinery (scripts/benchmark_methods.py, its
pages scripts/benchmark_report.py):
every task and method composes with the task's env, start and evaluation; the recipe is what archer_20q sets beyond
the paper's ArCHer and the same on every task; the games to half the gap, the stopping rule, a task's page and the
summary on made-up curves. Nothing here trains."""

from __future__ import annotations

import argparse
import shlex
from dataclasses import replace
from pathlib import Path

import benchmark_methods as bench
import benchmark_report as pages
import pytest
from benchmark_tasks import HEADROOM, RECIPE, TASKS, recipe_warmup
from omegaconf import OmegaConf

from archer.pretraining import pretraining_folder

ARGS = ["--methods=all", "--seeds=2"]


@pytest.fixture(scope="module")
def plans(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[argparse.Namespace, bench.Plan]]:
    """Every headroom task planned with all its methods (the composition is the slow part: done once)."""
    out = tmp_path_factory.mktemp("bench")
    planned = {}
    for name in HEADROOM:
        args = bench.parse_args([name, *ARGS, f"--out={out / name}", f"--docs={out / 'docs' / name}"])
        planned[name] = (args, bench.plan(args))
    return planned


def test_help_names_every_task(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        bench.parse_args(["--help"])
    text = capsys.readouterr().out
    for task in TASKS.values():
        assert f"  {task.name}: {task.description}" in text
    with pytest.raises(SystemExit):
        bench.parse_args(["sokoban", "--methods=archer_recipe,dqn"])
    assert "unknown methods ['dqn'] of sokoban" in capsys.readouterr().err


def test_recipe_is_what_archer_20q_sets_beyond_the_papers_archer() -> None:
    # archer_20q's schedule: 50 iterations with 15 of critic-only warm-up (the recipe's 30%), and its speed-only
    # settings (generation batch, the logged advantage check).
    assert recipe_warmup(50) == 15 and recipe_warmup(40) == 12 and recipe_warmup(2) == 1
    schedule = [
        "algorithm.num_iterations=50",
        f"algorithm.warmup_iters={recipe_warmup(50)}",
        "algorithm.generation_batch_size=128",
        "algorithm.log_advantage_check=true",
    ]
    with bench.hydra_configs():
        recipe = bench.compose_config("archer_20q", [])
        paper = bench.compose_config("archer_20q_paper_cpu", [*RECIPE, *schedule])
    ours = bench.flatten(OmegaConf.to_container(recipe, resolve=True), "")
    theirs = bench.flatten(OmegaConf.to_container(paper, resolve=True), "")
    assert ours[".model.critic.name_or_path"] == theirs[".model.critic.name_or_path"] == "minilm"
    # The embedded encoder's size is unused once the critic is MiniLM (the paper's CPU config sizes it smaller).
    unused = {key for key in ours if key.startswith(".model.critic.embedded.")}
    assert unused and ours.keys() == theirs.keys()
    assert {k: v for k, v in ours.items() if k not in unused} == {k: v for k, v in theirs.items() if k not in unused}


def test_every_task_and_method_composes_with_the_tasks_env_start_and_evaluation(
    plans: dict[str, tuple[argparse.Namespace, bench.Plan]],
) -> None:
    expected_env = {"twenty_questions_weak": "twenty_questions", "sokoban": "sokoban", "frozenlake": "frozenlake"}
    for name, (args, plan) in plans.items():
        task = plan.task
        reference = plan.reference
        assert [s.method for s in plan.specs] == [m for m in task.method_names for _ in (0, 1)]
        assert "chai" in task.method_names and "chai" not in [m.name for m in task.methods]  # optional
        # One start for every run: the same cached cloning folder, from the reference's cloning settings.
        assert {pretraining_folder(s.config) for s in plan.specs} == {pretraining_folder(reference)}
        for spec in plan.specs:
            config = spec.config
            assert config.env == reference.env and config.env.name == expected_env[name], (name, spec.method)
            assert config.data == reference.data and config.pretrain == reference.pretrain
            assert (config.eval.num_episodes, config.eval.seed) == (reference.eval.num_episodes, reference.eval.seed)
            assert spec.overrides[0] == task.env and spec.budget == 1280
            assert spec.config.seed == spec.seed and spec.run_dir.name == f"seed{spec.seed}"
        by_method = {s.method: s for s in plan.specs}
        # The recipe is the paper's config plus RECIPE, the same set on every task, and a 30% warm-up.
        paper, recipe = by_method["archer_paper"], by_method["archer_recipe"]
        assert paper.config_name == recipe.config_name == task.reference
        extra = [o for o in recipe.overrides if o not in paper.overrides]
        iterations = 1280 // recipe.per_iter
        assert extra == [*RECIPE, f"algorithm.warmup_iters={recipe_warmup(iterations)}"]
        assert recipe.config.model.policy.temperature == 0.5 and paper.config.model.policy.temperature == 1.0
        assert recipe.config.model.critic.name_or_path == "minilm"
        assert paper.config.model.critic.name_or_path == "embedded" and paper.config.algorithm.bc_coeff == 0.0
        # The on-policy methods are the long ones: they start at 1,280 games with a 10x ceiling.
        assert {m for m, s in by_method.items() if s.ceiling > s.budget} == {"ppo", "grpo", "gigpo"}
        assert {s.ceiling for s in plan.specs if s.definition.long} == {12800}
        # The evaluation interval divides every method's games per iteration into whole iterations.
        assert all(s.eval_every % s.per_iter == 0 and s.eval_every == args.eval_every for s in plan.specs)
    weak = plans["twenty_questions_weak"][1]
    assert weak.reference.env.data_skills == [0.1, 0.25] and weak.reference.pretrain.num_iterations == 30
    assert all(s.config.eval.sampled_episodes == 50 for s in weak.specs)
    assert weak.reference.eval.num_episodes is None and weak.task.metric == "eval/return_mean"
    # Sampling temperature stays each method's own: GRPO's config samples at 0.5, PPO's at 1.
    temperatures = {s.method: s.config.model.policy.temperature for s in weak.specs}
    assert (temperatures["grpo"], temperatures["ppo"]) == (0.5, 1.0)
    for name in ("sokoban", "frozenlake"):
        plan = plans[name][1]
        assert plan.reference.eval.num_episodes == 256 and plan.task.metric == "eval/success_rate"
        assert plans[name][0].eval_every == 128


def test_the_weak_starts_data_leave_the_best_far_ahead(
    plans: dict[str, tuple[argparse.Namespace, bench.Plan]],
) -> None:
    # The weak task's start clones scripted questioners of the skills its config names: their games must play far
    # below the optimal questioner (the task's best) on the same words, or no clone of them could be weak.
    from archer.envs.twenty_questions import best
    from archer.envs.twenty_questions.dataset import generate_twenty_questions_dataset
    from archer.envs.twenty_questions.oracle import KnowledgeBaseOracle
    from archer.envs.twenty_questions.words import word_list

    env = plans["twenty_questions_weak"][1].reference.env
    words = word_list(env.words)
    mix = [(skill, 1.0) for skill in env.data_skills]
    games = generate_twenty_questions_dataset(200, 0, KnowledgeBaseOracle(), words, skill_mix=mix, max_turns=20)
    data_return = sum(g.episode_return for g in games) / len(games)
    best_return = best(env, range(len(words))).return_mean
    assert best_return == pytest.approx(-2.8)
    # Measured: -8.0 over these 200 games, five questions a word behind the best.
    assert data_return < best_return - 4


def test_games_to_half_the_gap_by_hand() -> None:
    # Start -15, best -2.8: half the gap is -15 + (-2.8 + 15) / 2 = -8.9.
    assert pages.half_gap_level(-15.0, -2.8) == pytest.approx(-8.9)
    curve = [(0, -15.0), (160, -12.0), (320, -9.5), (480, -8.9), (640, -7.0)]
    assert pages.games_to_reach(curve, pages.half_gap_level(-15.0, -2.8)) == 480
    # Success rates: start 0.25, best 1.0, half the gap 0.625.
    assert pages.half_gap_level(0.25, 1.0) == 0.625
    gap, archer = pages.Reach(1536, 2560), pages.Reach(768, 1280)
    assert pages.reach_text(gap) == "1536" and pages.ratio_text(gap, archer) == "2.0x"  # 1536 / 768
    missed = pages.Reach(None, 12800)
    assert pages.reach_text(missed) == "not reached within 12800 games"
    assert pages.ratio_text(missed, archer) == "> 16.7x"  # at least 12800 / 768
    assert pages.ratio_text(gap, pages.Reach(None, 1280)) == "< 1.2x"  # at most 1536 / 1280
    assert pages.ratio_text(missed, pages.Reach(None, 1280)) == "n/a"


def test_stopping_rule_on_made_up_values() -> None:
    # Below the level: one more chunk; at or above it, or at the ceiling: stop; the level unknown: wait.
    assert bench.continue_to([0.5, 0.4], 0.75, 1280, 1280, 12800) == 2560
    assert bench.continue_to([0.75, 0.75], 0.75, 2560, 1280, 12800) is None
    assert bench.continue_to([1.0, 0.5], 0.75, 2560, 1280, 12800) is None  # the seed mean, 0.75
    assert bench.continue_to([0.0], 0.75, 12800, 1280, 12800) is None
    assert bench.continue_to([0.0], 0.75, 12160, 1280, 12800) == 12800  # never beyond the ceiling
    assert bench.continue_to([0.0], None, 1280, 1280, 12800) is None


# Made-up sokoban curves in eighths (exact in binary): evaluations every 128 games.
RECIPE_CURVES = [[2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 6], [2, 3, 3, 4, 4, 5, 5, 6, 6, 6, 6]]  # mean at 1,280: 6/8
PAPER_CURVES = [[2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4], [2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4]]  # never 5/8


def ppo_curve(games: int) -> list[int]:
    """Up 1/8 every 512 games from 2/8, to 7/8: 4/8 at 1,280, 7/8 from 2,560."""
    return [min(2 + x // 512, 7) for x in range(0, games + 1, 128)]


def made_up(plan: bench.Plan, method: str, curves: list[list[int]], games: int) -> list[bench.RunResult]:
    specs = [s for s in plan.specs if s.method == method]
    results = []
    for spec, values in zip(specs, curves, strict=True):
        spec = bench.extended(spec, games) if games != spec.budget else spec
        curve = [
            {"iteration": i * 128 // spec.per_iter, "x": float(i * 128), "return": v / 8 - 1, "success": v / 8}
            for i, v in enumerate(values)
        ]
        curve[0]["move_state_dependence"] = 0.125  # the start reads the board a little
        results.append(bench.RunResult(spec, curve=curve, finished=True, cpu_s=1800.0, final_rollout_return=0.5))
    return results


def test_on_policy_runs_continue_until_they_reach_the_recipes_final_mean(
    plans: dict[str, tuple[argparse.Namespace, bench.Plan]], tmp_path: Path
) -> None:
    args, plan = plans["sokoban"]
    task = plan.task
    path = tmp_path / "archive.json"
    recipe = made_up(plan, "archer_recipe", RECIPE_CURVES, 1280)
    # PPO's runs are archived at 3,840 games; the rule stops them at 2,560: at 1,280 their mean is 4/8, below the
    # recipe's final 6/8, so they continue; at 2,560 it is 7/8, at or above it, so they stop.
    ppo = made_up(plan, "ppo", [ppo_curve(3840)] * 2, 3840)
    bench.update_archive(path, [], [*recipe, *ppo], tmp_path)
    specs, results = bench.settle(task, plan.specs, bench.load_archive(path), args.trajectories)
    ran = {
        s.method: (s.budget, r.finished, r.final["x"] if r.final else None)
        for s, r in zip(specs, results, strict=True)
    }
    assert ran["ppo"] == (2560, True, 2560.0) and ran["archer_recipe"] == (1280, True, 1280.0)
    assert ran["grpo"] == (1280, False, None)  # nothing archived: its first chunk is still to run
    # Archived only to 1,280 games: the runs are continued to 2,560, which is still to be played.
    bench.update_archive(path, [], [*recipe, *made_up(plan, "ppo", [ppo_curve(1280)] * 2, 1280)], tmp_path)
    specs, results = bench.settle(task, plan.specs, bench.load_archive(path), args.trajectories)
    assert [(s.budget, r.finished) for s, r in zip(specs, results, strict=True) if s.method == "ppo"] == [
        (2560, False)
    ] * 2
    # Without the recipe's runs there is no stopping level: the runs wait at their first chunk.
    bench.update_archive(path, [], ppo, tmp_path)
    specs, results = bench.settle(task, plan.specs, bench.load_archive(path), args.trajectories)
    assert [(s.budget, r.final["x"]) for s, r in zip(specs, results, strict=True) if s.method == "ppo"] == [
        (1280, 1280.0)
    ] * 2


def test_task_page_and_summary_from_made_up_runs(
    plans: dict[str, tuple[argparse.Namespace, bench.Plan]], tmp_path: Path
) -> None:
    args, plan = plans["sokoban"]
    args = argparse.Namespace(**{**vars(args), "docs": tmp_path / "docs", "out": tmp_path / "out"})
    path = tmp_path / "archive.json"
    runs = [
        *made_up(plan, "archer_paper", PAPER_CURVES, 1280),
        *made_up(plan, "archer_recipe", RECIPE_CURVES, 1280),
        *made_up(plan, "ppo", [ppo_curve(3840)] * 2, 3840),
    ]
    bench.update_archive(path, [], runs, tmp_path)
    listed = [s for s in plan.specs if s.method in ("archer_paper", "archer_recipe", "ppo")]
    specs, results = bench.settle(plan.task, listed, bench.load_archive(path), args.trajectories)
    text = pages.report(results, args, {}, bench.Plan(plan.task, specs, plan.reference))
    for name in ("results.md", "runs.csv", "curves.csv", "curves.png"):
        assert (args.docs / name).stat().st_size > 0, name
    assert text == (args.docs / "results.md").read_text()
    # Every room of the 256 is solvable within the turn limit; the start is the runs' iteration 0 (2/8).
    assert "- Best: 1.00 (the exact solver" in text and "over the 256 evaluation games)" in text
    start = "greedy success rate 0.25 ± 0.00 (iteration 0 of the online runs); move-state dependence 0.125 ± 0.000"
    assert start in text
    assert "- Half the gap: 0.62, halfway from the start (0.25) to the best (1.00)." in text  # 0.625
    assert "| games to half the gap | vs archer_recipe | vs archer_paper |" in text
    # The recipe's seed mean reaches 5/8 at 768 games; the paper's never; PPO's at 1,536 (2.0x the recipe's, at most
    # 1536 / 1280 = 1.2x the paper's); the paper's at least 1280 / 768 = 1.7x the recipe's.
    assert "| s0: 0.75, s1: 0.75 | 768 | 1.0x | < 0.6x |" in text
    assert "| s0: 0.50, s1: 0.50 | not reached within 1280 games | > 1.7x | n/a |" in text
    ppo = "| 2560 env games | 0.25 ± 0.00 | 0.88 ± 0.00 | 0.62 ± 0.00 | s0: 0.88, s1: 0.88 | 1536 | 2.0x | < 1.2x |"
    assert ppo in text
    assert "- `ppo`: stopped at 2560 games (seed-mean last evaluation 0.88 >= 0.75)." in text
    # The recipe's final mean, 6/8, first reached by its seed mean at 1,024 games; PPO's at 2,048 (2.0x); the
    # paper's not within its 1,280 (at least 1280 / 1024 = 1.25x, shown rounded half to even).
    assert "## Games to `archer_recipe`'s final" in text
    assert "reaches `archer_recipe`'s final mean (0.750; the start 0.250)" in text
    assert "- `archer_paper`: not reached within 1280 games (> 1.2x)." in text
    assert "- `archer_recipe`: 1024 (1.0x)." in text and "- `ppo`: 2048 (2.0x)." in text
    assert "switches beyond the paper: none" in text and f"switches beyond the paper: `{shlex.join(RECIPE)}`" in text
    # Each method's overrides, pasted into a shell after `python run.py --config-name <config>`, are its arguments:
    # the recipe's `reply_separator='? '` keeps its quotes (and so its space) through the shell.
    recipe_line = next(line for line in text.splitlines() if line.startswith("- `archer_recipe` (2 seeds): config"))
    pasted = recipe_line.split("; overrides: `", 1)[1].removesuffix("`")
    recipe_spec = next(s for s in specs if s.method == "archer_recipe")
    assert shlex.split(pasted) == list(recipe_spec.overrides)
    assert "model.critic.turns.reply_separator='? '" in shlex.split(pasted)
    # Six runs of 1,800 CPU seconds each: ArCHer's at the budget of 1,280 games, PPO's at half of it (2,560 games).
    assert "- Total: 3.00 CPU-hours" in text
    assert "- Every finished online run within the budget of 1,800 CPU s per 1,280 games" in text
    assert [pages.cpu_per_budget(r) for r in results if r.spec.method in ("archer_paper", "ppo")] == [1800.0] * 2 + [
        900.0
    ] * 2
    results[0].cpu_s = 2000.0  # an archer_paper seed over the budget by 200 s; PPO at 4,000 s over 2,560 games
    for result in results:
        if result.spec.method == "ppo":
            result.cpu_s = 4000.0
    over = pages.over_budget(results)
    assert over == ["`archer_paper` 1 of 2 (2,000 s)", "`ppo` 2 of 2 (2,000 s)"]
    assert pages.budget_line(results).startswith("Over the budget of 1,800 CPU s per 1,280 games")

    rows = pages.summary_rows(plan.task, results, pages.task_figures(plan, results))
    assert rows == [
        "| sokoban | success rate | 0.25 | 1.00 | `archer_paper` | 0.50 ± 0.00 (2) | not reached within 1280 games "
        "| > 1.7x | not reached within 1280 games (> 1.2x) |",
        "| sokoban | success rate | 0.25 | 1.00 | `archer_recipe` | 0.75 ± 0.00 (2) | 768 | 1.0x | 1024 (1.0x) |",
        "| sokoban | success rate | 0.25 | 1.00 | `ppo` | 0.88 ± 0.00 (2) | 1536 | 2.0x | 2048 (2.0x) |",
    ]
    summary = pages.summary_markdown(rows, ["--summary"], {"sokoban": 3.0}, {"sokoban": 1}, {"sokoban": over})
    assert "benchmark_methods.py --summary" in summary and "sokoban 1x." in summary
    assert (
        "torch_threads=1`; each run's CPU time over the games it played, with the neighbours it had): sokoban: "
        "`archer_paper` 1 of 2 (2,000 s), `ppo` 2 of 2 (2,000 s)." in summary
    )
    within = pages.summary_markdown(rows, ["--summary"], {"sokoban": 3.0}, {"sokoban": 1}, {"sokoban": []})
    assert "with the neighbours it had): none." in within
    assert summary.endswith(pages.NEIGHBOURS_TEXT + "\n") and "1.6-1.8 times slower" in summary
    assert (
        rows[2] in summary
        and "CPU-hours of the runs per task (building each start is counted on the task's own page): sokoban 3.0."
        in summary
    )


def test_games_to_the_recipes_final_only_where_its_gain_is_beyond_noise(
    plans: dict[str, tuple[argparse.Namespace, bench.Plan]],
) -> None:
    _, plan = plans["sokoban"]
    # The recipe flat at the start (2/8) and PPO rising: every curve begins at the recipe's final, so no figure.
    flat = made_up(plan, "archer_recipe", [[2] * 11] * 2, 1280)
    results = [*flat, *made_up(plan, "ppo", [ppo_curve(1280)] * 2, 1280)]
    figures = pages.task_figures(plan, results)
    assert figures.start == 0.25 and pages.archer_final_reaches(plan.task, results, figures.start) == {}
    assert pages.archer_final_lines(plan.task, results, figures.start) == [
        "Not measured for `archer_recipe`: its final mean (0.250) is +0.000 from the start (0.250), not above twice "
        "its seed spread (0.000) with no seed below the start, so every curve begins within noise of it."
    ]
    # A gain of 1/8 on one seed and none on the other: 1/16 on the mean, within twice the spread (0.177).
    split = made_up(plan, "archer_recipe", [[2] * 10 + [3], [2] * 11], 1280)
    assert pages.archer_final_reaches(plan.task, [*split, *results[2:]], figures.start) == {}
    # Both seeds end at 9/32, 1/32 above the start with no spread: within two binomial standard errors of the start's
    # rate over the 256 rooms, 2 sqrt(0.25 x 0.75 / 256) = 0.054. At 3/8 (1/8 above) the level counts.
    alike = [replace(r, curve=[*r.curve[:-1], {**r.curve[-1], "success": 9 / 32}]) for r in flat]
    assert pages.archer_final_lines(plan.task, [*alike, *results[2:]], figures.start) == [
        "Not measured for `archer_recipe`: its final mean (0.281) is +0.031 from the start (0.250), not above two "
        "standard errors of the start's rate over its 256 games (0.054), so every curve begins within noise of it."
    ]
    higher = made_up(plan, "archer_recipe", [[2] * 10 + [3]] * 2, 1280)
    reaches = pages.archer_final_reaches(plan.task, [*higher, *results[2:]], figures.start)
    assert reaches == {"archer_recipe": pages.Reach(1280, 1280), "ppo": pages.Reach(512, 1280)}  # 2 + 512 // 512
    row = pages.summary_rows(plan.task, results, figures)[1]
    assert row.startswith("| sokoban | success rate | 0.25 | 1.00 | `ppo` |") and row.endswith("| n/a |")


def test_an_unfinished_runs_time_counts_in_the_total_but_not_in_a_runs_cost(
    plans: dict[str, tuple[argparse.Namespace, bench.Plan]], tmp_path: Path
) -> None:
    args, plan = plans["sokoban"]
    args = argparse.Namespace(**{**vars(args), "docs": tmp_path / "docs", "out": tmp_path / "out"})
    finished, stopped = made_up(plan, "archer_recipe", RECIPE_CURVES, 1280)
    stopped = replace(stopped, curve=stopped.curve[:4], finished=False, cpu_s=600.0, wall_s=700.0)
    finished = replace(finished, wall_s=2000.0)
    listed = [s for s in plan.specs if s.method == "archer_recipe"]
    text = pages.report([finished, stopped], args, {}, bench.Plan(plan.task, listed, plan.reference))
    # The row's cost is the finished seed's alone (1,800 CPU s, 2,000 wall s), not a mean with the stopped one's.
    assert "| s0: 0.75 |" in text and "| 2000 | 1800 |" in text
    assert "- Total: 0.67 CPU-hours" in text  # (1,800 + 600) / 3,600


def test_a_run_folder_is_the_same_run_from_another_checkout_or_with_another_length() -> None:
    """A run's identity leaves out the script's path, its length, folder, threads, bars and cache: the benchmark finds
    its finished runs when it runs from another checkout; any other item makes it another run."""
    command = ["/a/scripts/run.py", "--config-name", "c", "run_dir=/x", "seed=0", "algorithm.num_iterations=40"]
    moved = ["/b/scripts/run.py", "--config-name", "c", "run_dir=/y", "seed=0", "algorithm.num_iterations=80"]
    assert bench.run_identity(command) == bench.run_identity(moved) == ["--config-name", "c", "seed=0"]
    assert bench.run_identity(command) != bench.run_identity([*command[:4], "seed=1", command[5]])


def test_only_the_tasks_own_game_counts_as_a_start_built_during_the_runs(tmp_path: Path) -> None:
    # A cache shared with another task's benchmark gains that task's start while this one runs: not a warning here.
    for name in ("frozenlake-1438c641", "sokoban-7b3710b7", "twenty_questions-065bbef5"):
        (tmp_path / name).mkdir()
    assert bench._starts_of(tmp_path, "frozenlake-") == {tmp_path / "frozenlake-1438c641"}
    assert bench._starts_of(tmp_path / "absent", "sokoban-") == set()
