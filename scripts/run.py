"""Train with a composed config: ``python run.py --config-name bc_20q [key=value ...]``.

``--cfg job`` prints the composed config without running; ``--help`` lists the config groups. The project's own
errors (a bad config, a missing dataset, an unusable checkpoint, an absent server) print as one message and exit
with status 1; a run refused that way leaves no run folder. A key that moved (``algorithm.critic_lr`` is now
``algorithm.critic.lr``) is refused with its new path.
"""

from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig

from archer.cli import register_configs, report_composition_errors, run_or_refuse

register_configs()


@hydra.main(version_base="1.3", config_path="config", config_name="bc_20q")
def run(cfg: DictConfig) -> None:
    hydra_cfg = HydraConfig.get()
    log_file = f"{hydra_cfg.job.name}.log"
    launcher_files = frozenset(name for name in (hydra_cfg.output_subdir, log_file) if name)
    run_or_refuse(cfg, Path(hydra_cfg.runtime.output_dir), launcher_files, log_file)


if __name__ == "__main__":
    report_composition_errors(run)
