"""One exception family. Each error knows its exit code; the CLI prints it as one line."""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any


class PddplanError(Exception):
    """Base of every error pddplan raises on purpose."""

    exit_code = 1

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled with every attribute (an error raised in a worker process reaches the
        study's process whole: the default, ``cls(*args)``, calls ``__init__`` with the
        formatted message alone, which an :class:`OptionError` or :class:`OverrideError`
        cannot take, and the pool then reports itself broken)."""
        return (_rebuilt, (type(self), self.args, self.__dict__))


def _rebuilt(cls: type[PddplanError], args: tuple[Any, ...], state: dict[str, Any]) -> Any:
    """An error of ``cls`` with ``args`` and attributes ``state``, without ``__init__``."""
    err = cls.__new__(cls, *args)
    Exception.__init__(err, *args)
    err.__dict__.update(state)
    return err


class ProfileError(PddplanError):
    """A profile, scenario or data file is malformed or out of range (exit 1)."""

    exit_code = 1

    def __init__(
        self,
        message: str,
        *,
        file: str | None = None,
        key: str | None = None,
        line: int | None = None,
    ) -> None:
        where = ""
        if file:
            where = file
            if line is not None:
                where += f":{line}"
            where += ": "
        if key:
            where += f"{key}: "
        super().__init__(f"{where}{message}")
        self.detail = message  # the message without file, line and key
        self.file = file
        self.key = key
        self.line = line


class UnreadableFileError(ProfileError):
    """An input file the user named cannot be opened: it does not exist, is a directory or may
    not be read (exit 2, like an unknown scenario: the user asked for something that is not
    there). A file that opens but is malformed is a :class:`ProfileError` (exit 1)."""

    exit_code = 2


class UsageError(PddplanError):
    """The command line itself is wrong (exit 2)."""

    exit_code = 2


class TopologyError(ProfileError):
    """A topology file whose sites, lines and sources do not fit together: a line naming an
    unknown site or no WAN link profile, duplicate names, a disconnected topology, a source
    rate its share levels split below the least rate a pipeline is sized at (exit 1, as every
    other fault of a data file). The message names the file, the key (with the site, line or
    source) and what is allowed."""

    exit_code = 1


class NotFoundError(PddplanError):
    """A named profile does not exist (exit 2: the user asked for something unknown)."""

    exit_code = 2


class InfeasibleError(PddplanError):
    """No plan meets the SLA within the limits (exit 3)."""

    exit_code = 3

    def __init__(self, message: str, *, binding: str = "", relaxation: str = "") -> None:
        super().__init__(message)
        self.binding = binding
        self.relaxation = relaxation


class UnboundedBcrError(PddplanError):
    """A fleet a command must rank or plot by its BCR costs nothing (owned chips at sunk cost
    without opex, and no line or a free one): its BCR is unbounded (exit 3, as a question no
    plan answers). The message names the fleet and the inventory keys that price it."""

    exit_code = 3


class OverrideError(UsageError):
    """An override ``{"dotted.path": value}`` names no key of the scenario, or its value is
    rejected by the same validation a scenario file gets (exit 2, like a bad command-line value).

    ``key`` is the dotted path as the caller wrote it, ``value`` the value (absent for an unknown
    key) and ``detail`` the validation message without the key, the same words a YAML file gets.
    """

    exit_code = 2

    def __init__(self, detail: str, *, key: str, value: object = None, unknown_key: bool = False):
        super().__init__(f"overrides: {key}: {detail}")
        self.detail = detail
        self.key = key
        self.value = value
        self.unknown_key = unknown_key

    @property
    def value_text(self) -> str:
        """The value as a message echoes it (a list as ``[a, b]``, no Python repr)."""
        from pddplan.labels import plain_value

        return plain_value(self.value)


class OptionError(UsageError):
    """A keyword option of the library has a bad value (exit 2).

    ``option`` is the library's name of the option (``rate_rps``, ``max_chips``); the message is
    ``"{option} {detail}"`` (``"{option}: ..."`` when ``detail`` starts with a colon). The
    command line swaps in its flag (``--rate``, ``--max-chips``) with :meth:`naming`.
    """

    exit_code = 2

    def __init__(self, option: str, detail: str) -> None:
        self.option = option
        self.detail = detail
        super().__init__(self.naming(option))

    def naming(self, name: str) -> str:
        """The message with ``name`` in place of the option's library name."""
        return f"{name}{self.detail}" if self.detail.startswith(":") else f"{name} {self.detail}"


class InvariantError(PddplanError):
    """A computed result breaks a rule every answer satisfies (percentiles out of order, a
    negative time or cost, a non-finite number in JSON, output that does not parse): a bug in
    pddplan, reported instead of the wrong answer (exit 1)."""

    exit_code = 1

    def __init__(self, message: str) -> None:
        super().__init__(
            f"internal error (a bug in pddplan; please report it with the command line): {message}"
        )


# ------------------------------------------------------------------ did you mean


def _groups(word: str, choices: Iterable[str], n: int) -> tuple[list[str], list[str]]:
    """The names of ``choices`` that hold ``word`` (those that start with it first), and those
    close to it by edit distance; see :func:`suggestions`."""
    import difflib

    names = list(dict.fromkeys(c for c in choices if c != word))
    key = word.casefold()

    def ratio(name: str) -> float:
        return difflib.SequenceMatcher(None, key, name.casefold()).ratio()

    prefix = [c for c in names if key and c.casefold().startswith(key)]
    inside = [c for c in names if key and key in c.casefold() and c not in prefix]
    held = sorted(prefix, key=ratio, reverse=True) + sorted(inside, key=ratio, reverse=True)
    close = [c for c in difflib.get_close_matches(word, names, n=n) if c not in held]
    return held, close


def suggestions(word: str, choices: Iterable[str], n: int = 3) -> list[str]:
    """The names of ``choices`` that ``word`` most likely meant, best first, at most ``n``.

    Names that start with ``word`` come first (``wan-40g`` -> ``wan-40g-cross-city``, ...),
    then names that contain it, then names close by edit distance (:func:`difflib.
    get_close_matches`, cutoff 0.6); case is ignored for the first two. Within each group the
    closer name (difflib's ratio) comes first, then the order of ``choices``.
    """
    held, close = _groups(word, choices, n)
    return (held + close)[:n]


def dotted(path: Iterable[str | int]) -> str:
    """A key path as messages write it: ``roles.MD.chips[0]``."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + part
    return out or "(top level)"


def unknown_key(key: str, allowed: list[str]) -> str:
    """The message for a key that the schema at its place does not know, ``allowed`` being
    the keys it does know (sorted): the one wording for every unknown key of a document, named
    by the validation (:func:`pddplan.spec.validation.validation_to_profile_error`) or by the
    early key check (:mod:`pddplan.io.key_check`)."""
    return f"unknown key {key!r}{did_you_mean(key, allowed)} (allowed: {', '.join(allowed)})"


def line_for(doc: Any, path: tuple[str | int, ...]) -> int | None:
    """The line of the key ``path`` in ``doc`` (its ``lines``: key path -> 1-based line), or of
    its nearest enclosing key; None where the document has no lines."""
    for n in range(len(path), -1, -1):
        line = doc.lines.get(path[:n])
        if line is not None:
            return line
    return None


def did_you_mean(word: str, choices: Iterable[str], n: int = 3, *, within: str = "") -> str:
    """``"; did you mean 'x'?"`` or ``""`` when no name is close: the one did-you-mean every
    message uses.

    The names are :func:`suggestions`' first: up to ``n`` that hold ``word`` (a prefix may be
    short for any of them, so all are shown: ``'x', 'y' or 'z'``), else the one closest by edit
    distance (a typo has one best fix). ``within`` is written before each name shown
    (``"model."``: the choices are the keys of the model profile, shown as ``'model.KEY'``).
    """
    held, close = _groups(word, choices, n)
    guesses = [repr(within + g) for g in (held[:n] or close[:1])]
    if not guesses:
        return ""
    text = guesses[0] if len(guesses) == 1 else f"{', '.join(guesses[:-1])} or {guesses[-1]}"
    return f"; did you mean {text}?"


def write_failed(path: object, exc: OSError, option: str = "output") -> OptionError:
    """The one error for a file pddplan could not write (a full disk, a directory, no
    permission): ``--output /dev/full: cannot write: No space left on device``, naming the
    option that gave the path (the command line swaps in its flag)."""
    why = "it is a directory" if isinstance(exc, IsADirectoryError) else exc.strerror or str(exc)
    return OptionError(option, f"{path}: cannot write: {why}")


def check_writable_path(path: os.PathLike[str] | str, option: str = "output") -> None:
    """Fail before the work when ``path`` lies in no directory: ``--output /nonexistent/x.json:
    cannot write: no directory '/nonexistent'`` (an :class:`OptionError` naming ``option``)."""
    parent = os.path.dirname(os.fspath(path)) or "."
    if not os.path.isdir(parent):
        raise OptionError(option, f"{path}: cannot write: no directory {parent!r}")
