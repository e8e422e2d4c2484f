"""dev/padded_attention_probe.py: the padded batch and the counts by hand, and its tiny run on the CPU."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType

import pytest
import torch

from tests.conftest import load_dev_script


@pytest.fixture(scope="module")
def probe() -> ModuleType:
    return load_dev_script("padded_attention_probe")


def test_the_batch_is_right_aligned_with_positions_from_the_first_real_token(probe: ModuleType) -> None:
    batch = probe.left_padded_batch(rows=6, min_len=2, max_len=5, vocab=50, seed=0)
    mask, ids, positions = batch["attention_mask"], batch["input_ids"], batch["position_ids"]
    width = mask.shape[1]
    for row in range(6):
        length = int(mask[row].sum())
        assert 2 <= length <= 5
        assert mask[row].tolist() == [0] * (width - length) + [1] * length
        assert positions[row].tolist() == [0] * (width - length) + list(range(length))
        assert ids[row, : width - length].eq(0).all()


def test_non_finite_values_are_counted_at_padding_and_at_real_columns(probe: ModuleType) -> None:
    # (batch 2, columns 3, width 2): row 0 pads column 0; row 1 pads nothing.
    values = torch.zeros(2, 3, 2)
    values[0, 0, 1] = float("nan")  # padding
    values[0, 2, 0] = float("inf")  # real
    values[1, 0, :] = float("-inf")  # real, twice
    padding = torch.tensor([[True, False, False], [False, False, False]])
    assert probe.count_non_finite(values, padding) == {"padding": 1, "real": 3}
    counts = [{"padding": 0, "real": 0}, {"padding": 2, "real": 0}, {"padding": 0, "real": 1}]
    assert probe.first_bad_layer(counts) == 1
    assert probe.first_bad_layer(counts[:1]) is None


def test_the_tiny_probe_reads_every_layer_and_every_generated_token(probe: ModuleType, tmp_path: Path) -> None:
    out = tmp_path / "probe.json"
    report = probe.main(
        ["--tiny", "--rows", "4", "--min-len", "3", "--max-len", "9", "--new-tokens", "3", "--kernels",
         "default,math", "--out", str(out)]
    )  # fmt: skip
    assert json.loads(out.read_text()) == report
    assert report["rows"] == 4 and report["width"] <= 9 and 0 <= report["padding_share"] < 1
    for kernel in ("default", "math"):
        figures = report["kernels"][kernel]
        assert figures["status"] == "ok"
        assert len(figures["hidden_states"]) == 3  # the embeddings and 2 layers
        assert len(figures["cache"]) == 2
        assert len(figures["generate_rows_with_non_finite_logits"]) == 3
        # A 2-layer random model in bfloat16 on the CPU stays finite everywhere.
        assert figures["rows_with_non_finite_logits"] == 0 and figures["first_bad_cache_layer"] is None


def test_an_unknown_kernel_is_refused(probe: ModuleType) -> None:
    with pytest.raises(SystemExit):
        probe.main(["--tiny", "--kernels", "default,fast"])
