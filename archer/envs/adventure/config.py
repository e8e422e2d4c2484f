"""The Detective schema: ``env=adventure`` (``scripts/config/env/adventure.yaml``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from archer.config import ConfigError, EnvConfig, check_choice, check_noise_levels, check_path

Z_HEADER_BYTES = 64
"""A Z-machine story file starts with a 64-byte header: byte 0 is the version (1-8), bytes 0x1A-0x1B the file's
length, divided by 2 (versions 1-3), 4 (4-5) or 8 (6-8)."""


@dataclass
class AdventureEnvConfig(EnvConfig):
    """Detective, a Jericho text adventure (one of the ArCHer paper's tasks); needs ``pip install -e '.[jericho]'``.

    Attributes:
        batch_size: games played at once (the reference forced 4).
        max_turns: steps before a game is cut. The reference ran 50, which never reaches the walkthrough's winning
            51st move; 60 (the reference class's default) lets it win.
        game_path: the z-machine story file: Detective is ``dataset/detective.z5`` in the public GitHub repository
            YifeiZhou02/ArCHer (not shipped here). Relative paths are relative to the working directory.
        observation_format: ``labelled`` (the reference's content, each part under a label) or ``reference`` (the
            reference's unseparated concatenation with a Python list of valid actions).
        show_valid_actions: list Jericho's valid actions in the observation (the reference does). Each new game
            state then costs a Jericho search of 0.2-1 s on this CPU (cached per state).
        data_noise_levels: offline data: each generated episode follows the walkthrough but takes a random valid
            action instead with a probability drawn uniformly from these levels.
    """

    name: str = "adventure"
    batch_size: int = 8
    max_turns: int = 60
    game_path: str = "dataset/detective.z5"
    observation_format: str = "labelled"
    show_valid_actions: bool = True
    data_noise_levels: list[float] = field(default_factory=lambda: [0.0, 0.05, 0.1, 0.2, 0.3])

    def validate(self) -> None:
        super().validate()
        check_path(self.game_path, "env.game_path", "give the story file (Detective: dataset/detective.z5)")
        if Path(self.game_path).expanduser().is_file():
            check_story_file(Path(self.game_path).expanduser())
        check_choice(self.observation_format, "env.observation_format", ("labelled", "reference"))
        check_noise_levels(self.data_noise_levels, "env.data_noise_levels")


def check_story_file(path: Path) -> None:
    """``path`` is a Z-machine story file by its header: a version from 1 to 8 and, where the header gives one, a
    length the file holds. Jericho's interpreter ends the whole process ("Fatal error: Unknown Z-code version") on
    anything else.

    Raises:
        ConfigError: naming ``env.game_path``, the file and what is wrong.
    """
    with open(path, "rb") as handle:
        header = handle.read(Z_HEADER_BYTES)
    size = path.stat().st_size
    what = f"env.game_path: {path} is not a Z-machine story file"
    fix = "give Detective's detective.z5 (or another story file)"
    if len(header) < Z_HEADER_BYTES:
        raise ConfigError(f"{what} ({size} bytes, shorter than a story file's {Z_HEADER_BYTES}-byte header); {fix}")
    version = header[0]
    if not 1 <= version <= 8:
        raise ConfigError(
            f"{what} (its first byte, the Z-code version, is {version}, not 1-8): corrupt or foreign; {fix}"
        )
    scale = 2 if version <= 3 else 4 if version <= 5 else 8
    length = int.from_bytes(header[0x1A:0x1C], "big") * scale
    if length > size:
        raise ConfigError(
            f"env.game_path: {path} is not a whole Z-machine story file: its header gives a length of {length:,} "
            f"bytes, the file has {size:,} (truncated); {fix}"
        )
