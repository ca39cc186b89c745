"""Checkers for the exercises of notebook 03."""

__all__ = []
