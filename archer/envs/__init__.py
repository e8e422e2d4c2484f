"""Environments: the batched text-environment contract and its checker, the oracle protocol and the question-game
machinery shared by the games, and one package per game. ``registry.GAMES`` names them all."""
