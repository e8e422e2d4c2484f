"""The shipped Accelerate launch configs parse with Accelerate's own loader, and the trainer refuses the settings it
would otherwise silently ignore."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
from accelerate.commands.config.config_args import load_config_from_file
from accelerate.commands.launch import _validate_launch_command, launch_command_parser
from accelerate.utils import DistributedType

from archer.distributed import check_launch

ROOT = Path(__file__).resolve().parents[2]
CONFIGS = ROOT / "scripts" / "accelerate"
# file: (distributed type, processes, machines)
EXPECTED = {
    "single_gpu.yaml": (DistributedType.NO, 1, 1),
    "multi_gpu.yaml": (DistributedType.MULTI_GPU, 8, 1),
    "multi_node.yaml": (DistributedType.MULTI_GPU, 16, 2),
    "sharded_7b.yaml": (DistributedType.MULTI_GPU, 8, 1),
    "kalm_zero3.yaml": (DistributedType.DEEPSPEED, 8, 1),  # the KALM pipeline's grounding stage only
}


def test_every_shipped_config_is_expected() -> None:
    assert sorted(path.name for path in CONFIGS.glob("*.yaml")) == sorted(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_a_shipped_config_loads_and_resolves_as_accelerate_launch_does(name: str) -> None:
    path = str(CONFIGS / name)
    config = load_config_from_file(path)
    assert (config.distributed_type, config.num_processes, config.num_machines) == EXPECTED[name]
    assert config.mixed_precision == "no" and not config.use_cpu
    # What `accelerate launch --config_file <name> scripts/run.py ...` resolves before starting processes.
    args = launch_command_parser().parse_args(["--config_file", path, "scripts/run.py", "--config-name", "x"])
    args, _, _ = _validate_launch_command(args)
    assert args.multi_gpu == (EXPECTED[name][0] == DistributedType.MULTI_GPU)
    assert args.use_deepspeed == (EXPECTED[name][0] == DistributedType.DEEPSPEED)
    assert not args.use_fsdp and args.mixed_precision == "no"
    assert (args.num_processes, args.num_machines) == EXPECTED[name][1:]
    if name == "multi_node.yaml":
        assert args.main_process_port == 29500 and args.main_process_ip == "MAIN_MACHINE_IP"


def test_the_readme_gives_a_launch_command_for_every_config() -> None:
    readme = (ROOT / "README.md").read_text()
    for name in EXPECTED:
        assert f"--config_file scripts/accelerate/{name}" in readme, name


def test_a_misspelt_key_fails_to_load(tmp_path: Path) -> None:
    text = (CONFIGS / "multi_gpu.yaml").read_text().replace("num_processes:", "num_process:")
    (tmp_path / "typo.yaml").write_text(text)
    with pytest.raises(ValueError, match="unknown keys"):
        load_config_from_file(str(tmp_path / "typo.yaml"))


@pytest.mark.parametrize(
    ("distributed_type", "mixed_precision", "message"),
    [
        (DistributedType.FSDP, "no", "FSDP config"),
        (DistributedType.DEEPSPEED, "no", "DEEPSPEED config"),
        (DistributedType.MULTI_GPU, "bf16", "mixed_precision=bf16"),
    ],
)
def test_the_trainer_refuses_accelerate_settings_it_would_ignore(
    distributed_type: DistributedType, mixed_precision: str, message: str
) -> None:
    accelerator = SimpleNamespace(distributed_type=distributed_type, mixed_precision=mixed_precision)
    with pytest.raises(ValueError, match=message):
        check_launch(accelerator)  # type: ignore[arg-type]


def test_the_trainer_accepts_the_shipped_settings() -> None:
    check_launch(SimpleNamespace(distributed_type=DistributedType.MULTI_GPU, mixed_precision="no"))  # type: ignore[arg-type]
