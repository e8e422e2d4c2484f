"""Does a random-weight decoder give non-finite values on a left-padded batch, and under which attention kernel?

The 7B + LoRA run of ``scripts/gpu_check.py`` at 128 games (one generation batch of 128 prompts of up to 1,024
tokens) stopped on an H200 with torch's sampling check ("probability tensor contains either inf, nan or element
< 0") where the same run at 8 games had passed. A device-side assert carries no Python traceback, so this probe
takes the question apart: one forward pass of ``--rows`` left-padded rows of random token ids (lengths drawn
between ``--min-len`` and ``--max-len``, positions counted from the attention mask, as the policy does), once per
scaled-dot-product attention kernel, reading

- the rows whose last-position logits are not finite (what sampling would see),
- the non-finite keys and values in the returned cache, at padding columns and at real ones (padding columns are
  masked for every later query, but a NaN there still poisons them: a masked weight of 0 times NaN is NaN),
- the same for the hidden states at padding and at real positions,

and then one short greedy ``generate`` per kernel on the same rows, counting the rows whose logits are not finite
at each new token. ``--tiny`` runs the same code with the 2-layer, width-32 model on the CPU (the tests run it).

Usage (repository root)::

    python dev/padded_attention_probe.py --out probe.json                # one GPU, Mistral-7B shapes, bfloat16
    python dev/padded_attention_probe.py --tiny --rows 16 --max-len 64   # the CPU
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # a GPU machine runs it from a copy of the repository, the package not installed

from archer.models.architectures import architecture  # noqa: E402

#: The kernels torch can be restricted to (``None``: its own choice, as the trainer runs).
KERNELS = ("default", "math", "efficient", "cudnn", "flash")


def left_padded_batch(rows: int, min_len: int, max_len: int, vocab: int, seed: int) -> dict[str, torch.Tensor]:
    """Random token ids right-aligned in a (rows, max length) grid, the mask marking them, and positions counted
    from the first real token (0 on padding)."""
    generator = torch.Generator().manual_seed(seed)
    lengths = torch.randint(min_len, max_len + 1, (rows,), generator=generator)
    width = int(lengths.max())
    mask = (torch.arange(width)[None, :] >= width - lengths[:, None]).long()
    ids = torch.randint(0, vocab, (rows, width), generator=generator) * mask
    positions = (mask.cumsum(-1) - 1).clamp(min=0)
    return {"input_ids": ids, "attention_mask": mask, "position_ids": positions}


def count_non_finite(values: torch.Tensor, padding: torch.Tensor) -> dict[str, int]:
    """Non-finite entries of ``values`` (batch, ..., columns, ...) at padding and at real columns; ``padding`` is a
    (batch, columns) bool mask broadcast over the other dimensions by the caller's layout."""
    bad = ~torch.isfinite(values)
    return {"padding": int(bad[padding].sum()), "real": int(bad[~padding].sum())}


def cache_layers(cache: Any) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """(keys, values) of each layer, each (batch, heads, columns, head_dim), from a transformers cache."""
    if hasattr(cache, "layers"):
        return [(layer.keys, layer.values) for layer in cache.layers]
    return [(cache.key_cache[i], cache.value_cache[i]) for i in range(len(cache.key_cache))]


def kernel_context(kernel: str) -> Any:
    """A context that restricts scaled-dot-product attention to ``kernel`` (nothing for ``default``)."""
    from contextlib import nullcontext

    from torch.nn.attention import SDPBackend, sdpa_kernel

    backends = {
        "math": SDPBackend.MATH,
        "efficient": SDPBackend.EFFICIENT_ATTENTION,
        "cudnn": SDPBackend.CUDNN_ATTENTION,
        "flash": SDPBackend.FLASH_ATTENTION,
    }
    return nullcontext() if kernel == "default" else sdpa_kernel(backends[kernel])


def probe_kernel(model: Any, batch: dict[str, torch.Tensor], kernel: str, new_tokens: int) -> dict[str, Any]:
    """One forward pass and one short sampled ``generate`` on ``batch`` under ``kernel``: what is not finite."""
    padding = batch["attention_mask"] == 0
    start = time.perf_counter()
    with torch.no_grad(), kernel_context(kernel):
        output = model(**batch, use_cache=True, output_hidden_states=True, logits_to_keep=1)
        logits = output.logits[:, -1].float()
        figures: dict[str, Any] = {
            "rows_with_non_finite_logits": int((~torch.isfinite(logits)).any(-1).sum()),
            "hidden_states": [count_non_finite(h, padding) for h in output.hidden_states],
            "cache": [
                {
                    "keys": count_non_finite(k.transpose(1, 2), padding),
                    "values": count_non_finite(v.transpose(1, 2), padding),
                }
                for k, v in cache_layers(output.past_key_values)
            ],
        }
        figures["forward_s"] = time.perf_counter() - start
        del output
        if new_tokens > 0:
            # Greedy, with the raw logits of every step returned: a non-finite row is counted rather than stopping
            # the device as sampling's check would.
            generated = model.generate(
                input_ids=batch["input_ids"],
                attention_mask=batch["attention_mask"],
                do_sample=False,
                max_new_tokens=new_tokens,
                min_new_tokens=new_tokens,
                pad_token_id=0,
                output_logits=True,
                return_dict_in_generate=True,
            )
            figures["generate_rows_with_non_finite_logits"] = [
                int((~torch.isfinite(step.float())).any(-1).sum()) for step in generated.logits
            ]
    return figures


def first_bad_layer(counts: Sequence[dict[str, int]]) -> int | None:
    """Index of the first entry with a non-finite value anywhere, or None."""
    return next((i for i, c in enumerate(counts) if c["padding"] or c["real"]), None)


def run(args: argparse.Namespace) -> dict[str, Any]:
    device = torch.device("cuda" if torch.cuda.is_available() and not args.tiny else "cpu")
    config, model_class, _ = architecture("mistral-7b", tiny=args.tiny)
    torch.manual_seed(args.seed)
    with device:
        model = model_class._from_config(config, dtype=torch.bfloat16).eval()
    batch = {k: v.to(device) for k, v in left_padded_batch(args.rows, args.min_len, args.max_len, config.vocab_size,
                                                           args.seed).items()}  # fmt: skip
    report: dict[str, Any] = {
        "device": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
        "torch": torch.__version__,
        "rows": args.rows,
        "width": int(batch["input_ids"].shape[1]),
        "padding_share": float((batch["attention_mask"] == 0).float().mean()),
        "kernels": {},
    }
    for kernel in args.kernels.split(","):
        try:
            figures = probe_kernel(model, batch, kernel, args.new_tokens)
            figures["status"] = "ok"
        except Exception as error:  # one kernel's refusal (unsupported shapes) or failure is its result
            figures = {"status": "failed", "error": f"{type(error).__name__}: {str(error)[:400]}"}
            if "device-side assert" in str(error) or "CUDA error" in str(error):
                report["stopped"] = "a CUDA error leaves the device unusable: later kernels not probed"
        report["kernels"][kernel] = figures
        if figures["status"] == "ok":
            figures["first_bad_hidden_state"] = first_bad_layer(figures["hidden_states"])
            figures["first_bad_cache_layer"] = first_bad_layer(
                [{k: c["keys"][k] + c["values"][k] for k in ("padding", "real")} for c in figures["cache"]]
            )
        summary = {k: v for k, v in figures.items() if k not in ("hidden_states", "cache")}
        print(f"{kernel}: {json.dumps(summary)}", flush=True)
        if args.out is not None:
            args.out.write_text(json.dumps(report, indent=1) + "\n")
        if "stopped" in report:
            break
    return report


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tiny", action="store_true", help="the 2-layer, width-32 model on the CPU")
    parser.add_argument("--rows", type=int, default=128, help="prompts in the batch (128)")
    parser.add_argument("--min-len", type=int, default=300, help="shortest prompt in tokens (300)")
    parser.add_argument("--max-len", type=int, default=1024, help="longest prompt in tokens (1024)")
    parser.add_argument("--new-tokens", type=int, default=8, help="generated tokens per kernel; 0: forward only (8)")
    parser.add_argument("--kernels", default=",".join(KERNELS), help=f"comma-separated subset of {','.join(KERNELS)}")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=None, help="write the figures as JSON here")
    args = parser.parse_args(argv)
    unknown = set(args.kernels.split(",")) - set(KERNELS)
    if unknown:
        parser.error(f"unknown kernels {sorted(unknown)}; choose from {', '.join(KERNELS)}")
    return run(args)


if __name__ == "__main__":
    main()
