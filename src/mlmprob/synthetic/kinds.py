"""The names of the synthetic languages (``make_language``'s kinds), without importing the languages."""

KINDS = ("potts", "hmm", "grid")
