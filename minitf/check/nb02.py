"""Checkers for the exercises of notebook 02."""

__all__ = []
