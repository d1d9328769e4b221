"""Judging benchmarks: a results file (rounds of base and head) in, a `Comparison` out, with a
verdict per metric and overall, the environment's differences and speculative-decoding facts.
"""
