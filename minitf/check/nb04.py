"""Checkers for the exercises of notebook 04."""

__all__ = []
