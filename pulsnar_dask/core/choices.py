"""One check for a setting that takes one of a few named values."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


def check_choice(
    what: str, value: Any, choices: Iterable[Any], error: type[ValueError] = ValueError
) -> None:
    """Refuse a value that is not one of ``choices``.

    Parameters
    ----------
    what : str
        The setting, in words (``"bin method"``).
    value : object
        What was given.
    choices : iterable
        The values it may take.
    error : subclass of ValueError
        The error raised (the library's :class:`~pulsnar_dask.errors.PUError` where a
        user's input reaches the check directly).

    Raises
    ------
    ValueError
        ``unknown <what> <value>; choose one of <choices>``.
    """
    choices = tuple(choices)
    if value not in choices:
        raise error(f"unknown {what} {value!r}; choose one of {', '.join(map(str, choices))}")
