"""Checkers for the exercises of notebook 01."""

__all__ = []
