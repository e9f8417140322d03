"""The one error class of problems a user can fix."""


class PUError(ValueError):
    """A problem with the input, the settings or the environment, said in the library's
    words; the command line prints it as one line and exits with status 2."""
