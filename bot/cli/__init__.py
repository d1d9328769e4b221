"""The `perfbot` command line: one module per verb."""
