"""Slash commands that people write in pull request comments (`/bench ...`), parsed without I/O."""
