"""Pretraining: the behaviour-cloning run that builds a run's starting policy (``cfg.pretrain``), once per setting.

The pretraining run is an ordinary offline run (``cfg.pretrain`` is its algorithm) in a cache folder named by the
fingerprint of its config, so every run whose pretraining would be the same shares one trained policy. A
pretraining killed half way resumes from its own checkpoint next time; a marker file is written once it has
finished. ``archer.trainer.build_trainer`` calls ``pretrained_policy`` before it builds the run's trainer.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from archer.algorithms.base import POLICY_EXPORT
from archer.checkpointing import SPEED_ONLY_KEYS, config_fingerprint
from archer.config import CriticConfig, LoggingConfig, PolicyConfig, RunConfig
from archer.distributed import Placement
from archer.utils import atomic_write_text, resolve_cache_dir

log = logging.getLogger(__name__)

#: Written into the pretraining folder once the run has finished.
PRETRAIN_DONE = "PRETRAINED"
# How the policy samples and scores its samples: behaviour cloning does neither (it scores dataset actions under
# the plain softmax), so these do not change the pretrained policy.
SAMPLING_KEYS = ("temperature", "top_k", "top_p", "score_as_sampled")


def pretraining_config(cfg: RunConfig) -> tuple[RunConfig, str]:
    """The behaviour-cloning run that builds ``cfg``'s starting policy, and the fingerprint naming its cache folder.

    Raises:
        ValueError: ``cfg.pretrain`` is not set.
    """
    if cfg.pretrain is None:
        raise ValueError("pretraining_config: the run has no pretrain section")
    pretrain_cfg = RunConfig(
        algorithm=cfg.pretrain,
        env=cfg.env,
        # Behaviour cloning never builds the critic and never samples (its evaluation is greedy): neither the
        # critic's settings nor the sampling settings may change which cached policy is used.
        model=replace(
            cfg.model,
            critic=CriticConfig(),
            policy=replace(cfg.model.policy, **{key: getattr(PolicyConfig, key) for key in SAMPLING_KEYS}),
        ),
        data=cfg.data,
        # Sampled evaluation games do not change the pretrained policy (they leave training's random streams alone).
        eval=replace(cfg.eval, every_iters=cfg.pretrain.num_iterations, sampled_episodes=0),
        logging=LoggingConfig(progress_bars=cfg.logging.progress_bars),
        seed=0,
        cache_dir=cfg.cache_dir,
        torch_threads=cfg.torch_threads,
        save_every_iters=cfg.pretrain.num_iterations,
    )
    fingerprint = config_fingerprint(
        pretrain_cfg,
        ignore=("run_dir", "logging", "torch_threads", "cache_dir", "model.policy.shard", *SPEED_ONLY_KEYS),
    )
    return pretrain_cfg, fingerprint


def pretraining_folder(cfg: RunConfig) -> Path:
    """The cache folder of ``cfg``'s pretraining run."""
    pretrain_cfg, fingerprint = pretraining_config(cfg)
    return resolve_cache_dir(cfg.cache_dir) / "pretrained" / f"{pretrain_cfg.env.name}-{fingerprint}"


def pretrained_policy(cfg: RunConfig, placement: Placement, fit: Callable[[RunConfig, Path], Any]) -> Path:
    """The folder of ``cfg``'s starting policy: trained by ``fit(pretrain_cfg, folder)`` once, then reused.

    Every process takes part (the pretraining run is itself a distributed run) and must call this.

    Args:
        cfg: a run config with a ``pretrain`` section.
        placement: the processes, to wait for each other and write the marker once.
        fit: trains a run config in a folder (``archer.trainer`` passes a ``Trainer`` and its ``fit``).
    """
    pretrain_cfg, _ = pretraining_config(cfg)
    folder = pretraining_folder(cfg)
    placement.wait()
    if not (folder / PRETRAIN_DONE).exists():
        # The marker is written once every process is done, so a killed pretraining resumes from its own checkpoint
        # next time.
        log.info("building the starting policy by behaviour cloning in %s (once; cached)", folder)
        fit(pretrain_cfg, folder)
        if placement.is_main_process:
            atomic_write_text(folder / PRETRAIN_DONE, "behaviour cloning finished\n")
        placement.wait()
    return folder / POLICY_EXPORT
