"""Checkers for the exercises of notebook 05."""

__all__ = []
