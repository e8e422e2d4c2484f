"""One ArCHer critic step on a fixed batch, run by ``test_distributed.py`` under 1 or 2 processes.

Each process takes every ``num_processes``-th row of the same 8-row batch (with the same sampled V-target
actions), so a 2-process step sees the same global batch as a 1-process step. The main process saves the
updated critic, the target critic and the Q targets of the whole batch to the path given on the command line.
"""

from __future__ import annotations

import sys

import torch
from accelerate import Accelerator

from archer.algorithms.archer import ArcherAlgorithm
from archer.algorithms.losses import td_q_targets
from archer.config import ArcherConfig, CriticConfig, CriticTrainingConfig, EmbeddedModelConfig, PolicyConfig
from archer.data.trajectory import TransitionBatch
from archer.distributed import shard
from archer.models.critic import build_critic
from archer.models.loading import load_policy_model
from archer.models.policy import LanguagePolicy

TEXTS = [
    "Questions:\n",
    "Questions:\nIs it alive? Yes.\n",
    "Questions:\nIs it alive? Yes.\nIs it an animal? Yes.\n",
    "Questions:\nIs it alive? No.\nIs it a tool? Yes.\n",
]
TINY = EmbeddedModelConfig(n_layer=2, n_embd=32, n_head=2, vocab_size=320, max_positions=130)


def fixed_batch() -> tuple[TransitionBatch, list[str]]:
    observations = [TEXTS[i % 4] for i in range(8)]
    actions = ["Is it alive?", "Is it an animal?", "Is it a dog?", "Is it a hammer?"] * 2
    next_observations = [TEXTS[(i + 1) % 4] for i in range(8)]
    batch = TransitionBatch(
        observations=observations,
        actions=actions,
        rewards=torch.tensor([-1.0, -1.0, 0.0, -1.0, -1.0, 0.0, -1.0, -1.0]),
        next_observations=next_observations,
        terminated=torch.tensor([0.0, 0.0, 1.0, 0.0, 0.0, 1.0, 0.0, 0.0]),
        truncated=torch.zeros(8),
        mc_returns=torch.zeros(8),
        episode_returns=torch.zeros(8),
    )
    sampled = ["Is it big?", "Is it red?", "Is it a cat?", "Is it metal?"] * 2
    return batch, sampled


def main(out_path: str, cache_dir: str) -> None:
    accelerator = Accelerator(cpu=not torch.cuda.is_available())
    torch.manual_seed(0)
    policy_cfg = PolicyConfig(embedded=TINY, max_prompt_tokens=64, max_new_tokens=8)
    with accelerator.main_process_first():
        model, tokenizer = load_policy_model(policy_cfg, cache_dir, lambda: TEXTS)
        critic = build_critic(CriticConfig(embedded=TINY, max_tokens=64), cache_dir, lambda: TEXTS)
    cfg = ArcherConfig(critic=CriticTrainingConfig(lr=1e-3, gamma=0.9, tau=0.1, micro_batch_size=8))
    algorithm = ArcherAlgorithm(cfg, LanguagePolicy(model, tokenizer, policy_cfg), accelerator, critic, progress=False)

    initial = {name: value.clone() for name, value in algorithm.critic.state_dict().items()}
    batch, sampled = fixed_batch()
    with torch.no_grad():
        next_v1, _ = algorithm.target_critic.v_from_embeddings(algorithm.target_critic.embed(batch.next_observations))
        q1_targets = td_q_targets(batch.rewards, batch.terminated, next_v1, cfg.critic.gamma)
    rows = shard(list(range(len(sampled))), accelerator)
    local = TransitionBatch(
        observations=[batch.observations[i] for i in rows],
        actions=[batch.actions[i] for i in rows],
        rewards=batch.rewards[rows],
        next_observations=[batch.next_observations[i] for i in rows],
        terminated=batch.terminated[rows],
        truncated=batch.truncated[rows],
        mc_returns=batch.mc_returns[rows],
        episode_returns=batch.episode_returns[rows],
    )
    algorithm.critic_step(local, [sampled[i] for i in rows], iteration=1, step=0)
    if accelerator.is_main_process:
        torch.save(
            {
                "initial_critic": initial,
                "critic": algorithm.critic.state_dict(),
                "target_critic": algorithm.target_critic.state_dict(),
                "q1_targets": q1_targets,
                "num_processes": accelerator.num_processes,
            },
            out_path,
        )
    accelerator.wait_for_everyone()
    accelerator.end_training()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
