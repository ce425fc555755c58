"""One exception family. Each error knows its exit code; the CLI prints it as one line."""

from __future__ import annotations


class PddplanError(Exception):
    """Base of every error pddplan raises on purpose."""

    exit_code = 1

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


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


class UsageError(PddplanError):
    """The command line itself is wrong (exit 2)."""

    exit_code = 2


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
