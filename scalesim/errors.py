"""One exception type for every bad input, so callers can catch it and the CLI can print one line."""


class ScalesimError(ValueError):
    """Bad input: a wrong value, an unknown preset, a malformed or foreign file.

    The message is one line that says what is wrong and how to fix it.
    """
