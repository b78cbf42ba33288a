"""Exception hierarchy of cnsim. Every error a user can cause is a :class:`ConfigError`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable

_MISSING = object()


@dataclass(frozen=True)
class Problem:
    """One invalid item: dotted field path, what is wrong / allowed, and the offending value."""

    path: str
    message: str
    value: Any = _MISSING

    def __str__(self) -> str:
        where = self.path or "<scenario>"
        if self.value is _MISSING:
            return f"{where}: {self.message}"
        return f"{where}: {self.message} (got {_show(self.value)})"


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


class CnsimError(Exception):
    """Base class of every cnsim error."""


class ConfigError(CnsimError, ValueError):
    """An invalid scenario: one :class:`Problem` per line (CLI exit status 2)."""

    def __init__(self, problems: Iterable[Problem]):
        self.problems: list[Problem] = list(problems)
        super().__init__("\n".join(str(p) for p in self.problems))

    @classmethod
    def single(cls, path: str, message: str, value: Any = _MISSING) -> "ConfigError":
        """A ConfigError with one problem."""
        return cls([Problem(path, message, value)])


class OutputError(CnsimError, OSError):
    """The outputs could not be written (a full disk, a file-size limit, a folder gone): the message
    names the output folder and the cause; nothing was written under the final name (CLI exit 1)."""


class InvariantError(CnsimError):
    """The engine found a broken invariant (e.g. conservation) at the end of a run: a model bug."""


class RunInterrupted(CnsimError, KeyboardInterrupt):
    """The run was interrupted (Ctrl-C); nothing was written (CLI exit status 130)."""


class ConfigWarning(UserWarning):
    """A valid configuration that silently disables a mechanism (the message names the fields)."""


class RunWarning(ConfigWarning):
    """A run-end note (summary ``notes``): a result the configuration produced that the user should not
    miss, e.g. a link offered more than its capacity held far below it by the scheme's parameters."""
