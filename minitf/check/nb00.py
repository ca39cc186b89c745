"""Checkers for the exercises of notebook 00."""

__all__ = []
