"""Train with a composed config: ``python run.py --config-name bc_20q [key=value ...]``.

``--cfg job`` prints the composed config without running; ``--help`` lists the config groups.
"""

import sys

import hydra
from omegaconf import DictConfig

from archer.cli import main
from archer.config import ConfigError, register_configs

register_configs()


@hydra.main(version_base="1.3", config_path="config", config_name="bc_20q")
def run(cfg: DictConfig) -> None:
    try:
        main(cfg)
    except ConfigError as error:
        sys.exit(f"configuration error: {error}")


if __name__ == "__main__":
    run()
