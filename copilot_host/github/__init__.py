"""Placeholder: filled by its own issue."""
