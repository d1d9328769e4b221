"""The repository config: YAML text in, a validated `RepoConfig` (risk rules, suites) out.

Also compiles the rules' regular expressions and path globs, in linear time (RE2).
"""
