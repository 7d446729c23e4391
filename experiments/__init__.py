"""Experiments that reproduce the shapes of the papers' tables on antibody data, with resumable result files."""
