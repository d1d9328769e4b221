"""Rendering: risk reports, triage rankings, comparisons and bisect reports in, terminal text
and GitHub Markdown out (escaped, clipped and bounded in size); never decides anything.
"""
