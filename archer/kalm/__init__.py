"""KALM (Pang et al., NeurIPS 2024) in this project: ground a language model on environment vectors, imagine
rollouts for goals without data, and learn a goal-conditioned policy offline from real + imagined data.

Modules, in pipeline order:
    env: the numpy CLEVR-style ball-pushing environment, its success rule and the scripted noisy expert.
    clevr_mujoco_env: the same pushes simulated in MuJoCo (optional extra ``clevr_mujoco``).
    metaworld_env: a few Meta-World tasks behind the same interface (optional extra ``metaworld``).
    language: instruction templates, goal splits per level, goal encodings for the policy.
    data: trajectory sets in KALM's keys, collection with the expert, and the reader for KALM's ``.npy`` files.
    grounding: the grounded causal LM (state/action in, state/action/text out) and the four prompt patterns.
    imagination: greedy rollouts of the grounded model, stopped by the success rule.
    offline_rl: d3rlpy datasets and DiscreteBC / DiscreteCQL (optional extra ``kalm``).
    pipeline: the stages with caching, evaluation per level, metrics and plot (``--config-name kalm_clevr``).

Importing this package imports neither torch nor d3rlpy.
"""
