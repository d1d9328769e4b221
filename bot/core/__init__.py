"""The pure core: data in, data out; no web, GitHub, git, database, subprocess or network.

One subpackage per capability, layered bottom to top: ``config`` (the repository config and its
patterns), ``risk`` (diff -> risk report, commits -> triage ranking), ``judge`` (results file ->
verdicts), ``bisect`` (what to measure next, what was found), ``render`` (any of those -> text
and Markdown), ``review`` (a pull request's facts -> what to publish). Below them all, ``text``
(clipping, printable text). Lower layers never import higher ones; import-linter checks it.
"""
