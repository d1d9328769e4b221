"""Regressions on the default branch: what opens a regression case (a merge run's confirmed
regression, a change point of a series) and what supersedes one, the states a case goes through,
and the daily GPU budget the default branch's runs and bisects draw on, riskiest first."""
