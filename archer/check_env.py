"""``python -m archer.check_env env.target=module:callable [env.KEY=VALUE ...]``: check a user's environment.

Plays a few games of the environment ``env=external`` would train on (``archer/envs/external``) and prints what a
training run would trip on, one finding a line (``archer.envs.checker``): errors (wrong types, a reward that is not
a finite number, a call that raises), warnings (no ``info["success"]``, seeded games that replay differently, slow
steps) and notes. Settings are ``env.*`` overrides as on ``scripts/run.py``'s command line
(``env.max_turns=10 +env.kwargs.high=50``). Exit status: 0 when there is no error, 1 when there is one, 2 for a
setting or target that cannot be used.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from omegaconf import OmegaConf
from omegaconf.errors import OmegaConfBaseException

from archer.config import ConfigError
from archer.envs.checker import EnvReport
from archer.envs.external.config import ExternalEnvConfig
from archer.envs.external.target import check_target


def env_config(overrides: Sequence[str]) -> ExternalEnvConfig:
    """The ``ExternalEnvConfig`` of ``env.KEY=VALUE`` overrides (a leading ``+`` or ``++`` is allowed), validated.

    Raises:
        ConfigError: an override is not ``env.KEY=VALUE``, names no setting, or a value is refused.
    """
    dotlist = []
    for override in overrides:
        stripped = override.lstrip("+")
        if not stripped.startswith("env.") or "=" not in stripped:
            raise ConfigError(f"{override}: give env settings as env.KEY=VALUE (e.g. env.target=my_games:MyGame)")
        dotlist.append(stripped.removeprefix("env."))
    try:
        merged = OmegaConf.merge(OmegaConf.structured(ExternalEnvConfig), OmegaConf.from_dotlist(dotlist))
        if OmegaConf.is_missing(merged, "target"):
            raise ConfigError("env.target: required; give env.target=module:callable")
        cfg = OmegaConf.to_object(merged)
    except OmegaConfBaseException as error:
        raise ConfigError(f"env.{error.full_key}: {str(error).splitlines()[0]}") from None
    assert isinstance(cfg, ExternalEnvConfig)
    cfg.validate()
    return cfg


def check(overrides: Sequence[str], num_games: int = 3, seed: int = 0) -> EnvReport:
    """The checker's report on the environment the overrides describe."""
    cfg = env_config(overrides)
    return check_target(cfg, num_games, seed=seed)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m archer.check_env", description=__doc__.splitlines()[0])
    parser.add_argument("overrides", nargs="*", help="env.target=module:callable and other env.KEY=VALUE settings")
    parser.add_argument("--games", type=int, default=3, help="games to play (single-game environments)")
    parser.add_argument("--seed", type=int, default=0, help="the first game's seed")
    args = parser.parse_args(argv)
    try:
        report = check(args.overrides, args.games, args.seed)
    except ConfigError as error:
        print(f"configuration error: {error}", file=sys.stderr)
        return 2
    print("\n".join(report.lines()))
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
