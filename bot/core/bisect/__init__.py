"""Bisection: the triage ranking and the probes judged so far in, the next commit to measure
out; the measurements in, a `BisectReport` naming the culprit (or why none was found) out.
"""
