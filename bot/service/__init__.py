"""Orchestration: handlers that gather facts through ports, call the core and apply the results."""
