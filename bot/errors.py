"""The base type of user errors: a mistake in what the user asked for or gave (a bad argument,
an unknown revision, an invalid config) that the command line reports in one line, exit status 2.

It imports nothing, so the command line can catch every user error without first loading the
modules that raise them (GitPython, pydantic).
"""


class UserError(Exception):
    """A mistake the user can fix; the message says which, in one line."""
