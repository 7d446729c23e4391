"""Seeded generators and tiny exact models shared by the sampling test modules."""

import torch

from mlmprob import ExactMLM


def gen(seed):
    return torch.Generator().manual_seed(seed)


def exact(V=3, T=3, seed=1):
    """A random ``ExactMLM`` (incompatible conditionals) with ``V`` tokens over ``T`` positions."""
    return ExactMLM.random(V, T, gen(seed), scale=1.0)
