"""Integrations with other agent frameworks (each imports its framework on use)."""
