"""Errors a user can fix: reported as one line by the command line, never as a traceback."""


class UserError(Exception):
    """A problem with the user's input, options or environment (exit status 2)."""
