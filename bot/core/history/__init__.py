"""The default branch's history: change points of metric series, the merges a change is
attributed to, and the benchmark outcome of each merge."""
