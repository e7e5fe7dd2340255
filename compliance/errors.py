"""The errors the compliance commands report as one line (never a traceback): what is wrong and the fix."""


class InputError(ValueError):
    """Input the command cannot work on (a descriptor, logs, an output folder); nothing was written."""


class UsageError(InputError):
    """A request the command does not serve: a retired ruleset, a PATH of the wrong kind."""
