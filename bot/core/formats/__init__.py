"""Standard benchmark output formats, read into metrics: one pure parser per format, each taking
a file's text and name and giving `base.Reading`s (value, unit, better direction and, where the
format carries per-item numbers, the value's standard error from them), or one `base.FormatError`
line naming the file and the field. The suite kinds that run the tools are
`bot.core.config.suite_kinds` (options) and `bot.runner.suites` (rounds).
"""
