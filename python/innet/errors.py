"""The exceptions innet raises.

``InnetError`` is the base of all of them; ``TimeoutError`` (no answer: the
outcome of the request is unknown) is also a builtin ``TimeoutError``, and
``ConfigError`` (a bad argument or topology file) also a ``ValueError``.
"""

import builtins


class InnetError(Exception):
    """Something innet could not do (a socket, a stopped deployment, a refusal)."""


class TimeoutError(InnetError, builtins.TimeoutError):
    """Nothing answered within the timeout and resends."""


class ConfigError(InnetError, ValueError):
    """A bad argument, address, value or topology file."""


__all__ = ["InnetError", "TimeoutError", "ConfigError"]
