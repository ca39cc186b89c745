"""Checkers for the exercises of notebook 06."""

__all__ = []
