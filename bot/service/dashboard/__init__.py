"""The dashboard of flagged merges: its read model and port, the metric history with change
points, triage by maintainers, the calibration of the risk alerts, and who may see what."""
