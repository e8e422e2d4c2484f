"""``measure_floors``' critic share: the critic floors timed on a share of their work and scaled back up."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from archer import phase_timing


class Buffer:
    """Rows numbered by their index; ``get`` returns the picked rows' states and actions."""

    def __len__(self) -> int:
        return 1000

    def get(self, indices):
        return SimpleNamespace(observations=[f"s{i}" for i in indices], actions=[f"a{i}" for i in indices])


def fake_trainer() -> SimpleNamespace:
    algorithm_cfg = SimpleNamespace(
        generation_batch_size=4,
        critic_steps_per_iter=5,
        critic_batch_size=8,  # 40 samples in micro-batches of 4: ten micro-batches
        critic=SimpleNamespace(micro_batch_size=4),
        actor_micro_batch_size=2,
    )
    policy = SimpleNamespace(encode_prompts=lambda states: [[1]] * len(states))
    return SimpleNamespace(
        cfg=SimpleNamespace(algorithm=algorithm_cfg, env=SimpleNamespace(batch_size=4)),
        policy=policy,
        algorithm=SimpleNamespace(critic=object()),
        buffer=Buffer(),
    )


@pytest.fixture
def one_second_per_call(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[int]]:
    """Each generate call of a row and each critic micro-batch costs one second; records what was timed."""
    calls: dict[str, list[int]] = {"generated_rows": [], "critic_rows": []}
    monkeypatch.setattr(
        phase_timing, "rollout_floors", lambda *a: {"rollout_no_cache": 1.0, "rollout_kept_cache": 1.0}
    )

    def generate(policy, prompts, batch_size):
        calls["generated_rows"].append(len(prompts))
        return float(len(prompts))

    def critic(algorithm, states, actions, micro_batch):
        calls["critic_rows"].append(len(states))
        return float(len(states) // micro_batch)

    monkeypatch.setattr(phase_timing, "bare_generate", generate)
    monkeypatch.setattr(phase_timing, "critic_floor", critic)
    return calls


def test_a_share_of_the_critic_work_is_timed_and_scaled_to_the_whole(one_second_per_call) -> None:
    states = [f"s{i}" for i in range(10)]
    whole, _ = phase_timing.measure_floors(fake_trainer(), [], states, [], critic_share=1.0)
    part, rows = phase_timing.measure_floors(fake_trainer(), [], states, [], critic_share=0.2)
    # Whole: 10 V-target rows (10 s) and 10 micro-batches (10 s). A fifth: 2 rows and 8 samples (2 micro-batches),
    # 2 s each, scaled by 5 and by 40 / 8.
    assert one_second_per_call["generated_rows"] == [10, 2]
    assert one_second_per_call["critic_rows"] == [40, 8]
    assert whole["critic_generation"] == part["critic_generation"] == 10.0
    assert whole["critic_update"] == part["critic_update"] == 10.0
    assert len(rows["critic"][0]) == 8


def test_the_share_is_at_least_one_micro_batch_and_must_be_a_fraction(one_second_per_call) -> None:
    floors, _ = phase_timing.measure_floors(fake_trainer(), [], ["s0"], [], critic_share=0.01)
    assert one_second_per_call["critic_rows"] == [4]  # one micro-batch, scaled by 40 / 4
    assert floors["critic_update"] == 10.0
    with pytest.raises(ValueError, match="critic_share"):
        phase_timing.measure_floors(fake_trainer(), [], [], [], critic_share=0.0)
