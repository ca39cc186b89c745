"""Checkers for the exercises of notebook 08."""

__all__ = []
