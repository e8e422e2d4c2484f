"""Policy steps on a fixed batch with a full or an FSDP-sharded policy, run by ``test_sharding.py`` under 2 processes.

Usage: ``sharded_policy_worker.py OUT_DIR CACHE SHARD[,SHARD...]`` with each ``SHARD`` in ``none``/``fsdp``; for each
it runs a full policy and a LoRA policy (one launch for several modes saves the processes' start-up). Each process
takes every second row of the same 8-row batch. For each policy the worker

1. decodes greedily, first with the weights gathered for a "phase" in which process 0 calls ``generate`` three times
   and process 1 once (as rollouts do when one process's games end earlier), then once per call;
2. takes two clipped Adam steps of the behaviour-cloning loss (``clip_and_step``: gradients averaged by FSDP or by
   ``average_gradients``);
3. gathers a checkpoint (full tensors) and writes the policy as a Hugging Face folder, as the trainer does;
4. builds a fresh policy, loads that checkpoint into it (split like its shards), and takes a third step with both
   the original and the reloaded policy.

The main process saves what the test compares to ``OUT_DIR/<SHARD>-<full|lora>.pt``, the checkpoint beside it
(``.checkpoint.pt``) and the policy folder (``.policy``).
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch
from accelerate import Accelerator

from archer.algorithms.accumulation import clip_and_step
from archer.config import EmbeddedModelConfig, PolicyConfig
from archer.distributed import shard
from archer.models.loading import load_policy_model, policy_weights, save_policy
from archer.models.policy import LanguagePolicy
from archer.models.sharding import full_state, gathered, is_sharded, shard_like, shard_policy

TEXTS = [
    "Questions:\n",
    "Questions:\nIs it alive? Yes.\n",
    "Questions:\nIs it alive? Yes.\nIs it an animal? Yes.\n",
    "Questions:\nIs it alive? No.\nIs it a tool? Yes.\n",
]
ACTIONS = ["Is it alive?", "Is it an animal?", "Is it a dog?", "Is it a hammer?"]
TINY = EmbeddedModelConfig(n_layer=2, n_embd=32, n_head=2, vocab_size=320, max_positions=130)
MAX_GRAD_NORM = 0.5  # below the first steps' gradient norms, so clipping is exercised


def build(cfg: PolicyConfig, cache_dir: str, accelerator: Accelerator) -> tuple[LanguagePolicy, torch.optim.Adam]:
    with accelerator.main_process_first():
        model, tokenizer = load_policy_model(cfg, cache_dir, lambda: TEXTS)
    if cfg.shard == "fsdp":
        model = shard_policy(model, accelerator)
    policy = LanguagePolicy(model, tokenizer, cfg)
    optimizer = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=1e-2)
    return policy, optimizer


def step(policy: LanguagePolicy, optimizer: torch.optim.Adam, accelerator: Accelerator) -> float:
    """One behaviour-cloning step on this process's rows of the fixed batch; returns the gradient norm."""
    rows = shard(list(range(8)), accelerator)
    observations = [TEXTS[i % 4] for i in rows]
    actions = [ACTIONS[(i + 1) % 4] for i in rows]
    logprobs, mask = policy.token_logprobs(observations, policy.encode_actions(actions), as_sampled=False)
    loss = -(logprobs * mask).sum() / mask.sum()
    policy.model.train()
    accelerator.backward(loss)
    policy.model.eval()
    return clip_and_step(accelerator, optimizer, policy.model.parameters(), MAX_GRAD_NORM)


def run(out_path: str, cache_dir: str, shard_mode: str, lora: bool, accelerator: Accelerator) -> None:
    keep = accelerator.is_main_process
    torch.manual_seed(0)
    cfg = PolicyConfig(
        embedded=TINY, max_prompt_tokens=64, max_new_tokens=8, shard=shard_mode, use_lora=lora,
        lora_target_modules=["c_attn"], lora_dropout=0.0,
    )  # fmt: skip
    policy, optimizer = build(cfg, cache_dir, accelerator)
    assert is_sharded(policy.model) == (shard_mode == "fsdp")

    with gathered(policy.model):
        calls = 3 if accelerator.process_index == 0 else 1
        phase = [policy.generate(TEXTS, greedy=True).token_ids for _ in range(calls)]
    per_call = policy.generate(TEXTS, greedy=True).token_ids

    norms = [step(policy, optimizer, accelerator) for _ in range(2)]
    checkpoint = full_state({"policy": policy.model.state_dict(), "optimizer": optimizer.state_dict()}, keep)
    weights = full_state(policy_weights(policy.model), keep)
    folder = Path(out_path).with_suffix(".policy")
    if keep:
        save_policy(policy.model, policy.tokenizer, str(folder), weights=weights)

    # The main process writes the gathered checkpoint and every process reads it back, as a resumed run does.
    checkpoint_path = Path(out_path).with_suffix(".checkpoint.pt")
    if keep:
        torch.save(checkpoint, checkpoint_path)
    accelerator.wait_for_everyone()
    checkpoint = torch.load(checkpoint_path, weights_only=True)
    reloaded, reloaded_optimizer = build(cfg, cache_dir, accelerator)
    model_state = checkpoint["policy"]
    if is_sharded(reloaded.model):
        model_state = shard_like(model_state, reloaded.model.state_dict())
    reloaded.model.load_state_dict(model_state)
    reloaded_optimizer.load_state_dict(checkpoint["optimizer"])
    norms.append(step(policy, optimizer, accelerator))
    reloaded_norm = step(reloaded, reloaded_optimizer, accelerator)

    result = {
        "num_processes": accelerator.num_processes,
        "phase_ids": phase,
        "per_call_ids": per_call,
        "grad_norms": norms,
        "reloaded_grad_norm": reloaded_norm,
        "after_three": full_state(policy.model.state_dict(), keep),
        "reloaded_after_three": full_state(reloaded.model.state_dict(), keep),
        "grad_param_types": sorted({type(p).__name__ for p in policy.model.parameters()}),
    }
    if keep:
        torch.save(result, out_path)
    accelerator.wait_for_everyone()


def main(out_dir: str, cache_dir: str, shard_modes: str) -> None:
    torch.set_num_threads(1)
    accelerator = Accelerator(cpu=True)
    for shard_mode in shard_modes.split(","):
        for variant in ("full", "lora"):
            out_path = str(Path(out_dir) / f"{shard_mode}-{variant}.pt")
            run(out_path, cache_dir, shard_mode, variant == "lora", accelerator)
    accelerator.end_training()
    if torch.distributed.is_initialized():
        torch.distributed.destroy_process_group()


if __name__ == "__main__":
    main(*sys.argv[1:4])
