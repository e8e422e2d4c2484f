"""dev/evaluate_run.py on tiny runs: a greedy run's repeated games reproduce its own last evaluation, CHAI's reranked
evaluation is played from the checkpoint the same way on every call, the run folder is left as it was, and the
refusals."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from tests.conftest import TINY_RUN_OVERRIDES, load_dev_script
from tests.integration.test_online_methods import CRITIC_TINY, PRETRAIN_TINY, tiny_run
from tests.integration.test_training import ARCHER_TINY, read_records, tiny_archer

pytestmark = pytest.mark.integration


def folder_contents(folder: Path) -> dict[str, bytes]:
    return {str(path.relative_to(folder)): path.read_bytes() for path in sorted(folder.rglob("*")) if path.is_file()}


def test_a_greedy_runs_repeated_games_score_its_last_evaluation(tmp_path: Path) -> None:
    run, cache = tmp_path / "run", str(tmp_path / "cache")
    tiny_archer(run, cache, *ARCHER_TINY).fit()
    last = [record for record in read_records(run) if "eval/return_mean" in record][-1]
    before = folder_contents(run)
    schedule = ["algorithm.num_iterations=2", *ARCHER_TINY]
    overrides = [*TINY_RUN_OVERRIDES, f"cache_dir={cache}", *schedule, f"run_dir={run}"]
    out = tmp_path / "figures.json"
    figures = load_dev_script("evaluate_run").main(
        ["--config-name", "archer_20q", *overrides, "--repeats", "3", "--json", str(out)]
    )
    # Greedy decoding plays each game the same way three times: the mean is the run's own last evaluation's.
    assert figures["eval/episodes"] == 3 * last["eval/episodes"]
    assert figures["eval/return_mean"] == pytest.approx(last["eval/return_mean"])
    assert figures["eval/success_rate"] == pytest.approx(last["eval/success_rate"])
    assert figures["eval/iteration"] == 2
    sem = figures["eval/return_std"] / math.sqrt(figures["eval/episodes"])
    assert figures["eval/return_sem"] == pytest.approx(sem)
    assert json.loads(out.read_text()) == figures
    assert folder_contents(run) == before


def test_chais_reranked_play_is_seeded_and_read_from_the_checkpoint(tmp_path: Path) -> None:
    run, cache = tmp_path / "run", str(tmp_path / "cache")
    reranked = ["algorithm.rerank_at_eval=true", "algorithm.num_candidates=2"]
    tiny_run("chai_20q", run, cache, *reranked).fit()
    overrides = [*TINY_RUN_OVERRIDES, f"cache_dir={cache}", *PRETRAIN_TINY, *CRITIC_TINY, *reranked, f"run_dir={run}"]
    evaluate_run = load_dev_script("evaluate_run")
    args = ["--config-name", "chai_20q", *overrides, "--repeats", "2"]
    first, second = evaluate_run.main(args), evaluate_run.main(args)
    assert first == second and first["eval/episodes"] == 8 and first["eval/iteration"] == 2
    assert -4.0 <= first["eval/return_mean"] <= 0.0  # four turns at -1 each at most
    untrained = evaluate_run.main([*args, "--untrained"])
    assert untrained["eval/episodes"] == 8 and untrained["eval/iteration"] == 0
    sampled = evaluate_run.main([*args, "--acting", "sampled"])
    assert sampled["eval/episodes"] == 8
    with pytest.raises(SystemExit):
        evaluate_run.main([*args, "--repeats", "0"])
    with pytest.raises(SystemExit):
        evaluate_run.main(["--config-name", "chai_20q", *overrides[:-1], f"run_dir={tmp_path / 'none'}"])
