"""``tf32``: TensorFloat-32 float32 products on a CUDA device only, and never inherited by a later run."""

from __future__ import annotations

import pytest
import torch

from archer.trainer import set_float32_matmul
from tests.conftest import compose_run


@pytest.fixture
def restore_precision():
    before = torch.get_float32_matmul_precision()
    yield
    torch.set_float32_matmul_precision(before)


def test_tf32_switches_float32_products_on_a_cuda_device_and_back(restore_precision: None) -> None:
    cuda = torch.device("cuda")  # the setting is a process-wide flag: no GPU is needed to read it back
    assert set_float32_matmul(True, cuda) == "high"
    assert set_float32_matmul(False, cuda) == "highest"


def test_tf32_leaves_a_cpu_run_in_exact_float32(restore_precision: None) -> None:
    torch.set_float32_matmul_precision("highest")
    assert set_float32_matmul(True, torch.device("cpu")) == "highest"


def test_tf32_is_a_config_key_off_by_default() -> None:
    assert compose_run("archer_20q_paper").tf32 is False
    assert compose_run("archer_20q_paper", ["tf32=true"]).tf32 is True
    with pytest.raises(Exception, match="tf32"):
        compose_run("archer_20q_paper", ["tf32=maybe"])
