"""The repository config: YAML text in, a validated `RepoConfig` (risk rules, suites) out.

Also compiles the rules' regular expressions and path globs, in linear time (RE2). The risk rules
themselves are plain data (`rules`): a command that reads no config file never loads the schema.
"""

CONFIG_PATH = ".github/perfbot.yml"
