"""Sampling from MLMs."""
