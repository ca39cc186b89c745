"""Checkers for the exercises of notebook 07."""

__all__ = []
