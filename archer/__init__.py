"""archer: multi-turn reinforcement learning for language-model agents (ArCHer and its baselines)."""

__version__ = "0.1.0"
