"""Input files read with bounds: at most a set number of bytes whatever the file is (a pipe or a
device such as ``/dev/zero`` included), JSON with a nesting limit, every failure one
:class:`~pddplan.errors.ProfileError` naming the file (an :class:`~pddplan.errors.
UnreadableFileError` when it cannot be opened).

The one home of "read a data file": the plan JSON of ``simulate --plan``, calibration CSVs,
capacity curves and the YAML loader read through it.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from pddplan.errors import ProfileError, UnreadableFileError
from pddplan.limits import INPUT_BYTES, Cap


def unreadable(path: Path, what: str = "file", exc: OSError | None = None) -> UnreadableFileError:
    """Why the input ``path`` cannot be read as a ``what`` (``scenario file``, ``trace``), in
    the one set of words every command uses: no such file, a directory, not a regular file,
    or the system's reason (exit 2)."""
    if not path.exists():
        why = f"no such {what}"
    elif path.is_dir():
        why = f"a directory, not a {what}"
    elif exc is not None:
        why = f"cannot read the {what}: {exc.strerror or exc}"
    else:
        why = f"not a regular file (a {what} is read as one)"
    return UnreadableFileError(why, file=str(path))


#: Deepest nesting of arrays and objects a JSON input may have [-] (the YAML reader's limit).
MAX_JSON_DEPTH = 64

_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.S)


def read_bytes(path: Path, *, cap: Cap = INPUT_BYTES, what: str = "file") -> bytes:
    """The bytes of ``path``, reading at most the cap plus one byte.

    Raises
    ------
    UnreadableFileError
        When the file cannot be opened (missing, a directory, not readable): exit code 2.
    ProfileError
        When it holds more bytes than the cap allows (the message names
        the cap's environment variable).
    """
    limit = cap.value()
    try:
        with path.open("rb") as fh:
            data = fh.read(limit + 1)
    except OSError as exc:
        raise unreadable(path, what, exc) from None
    if len(data) > limit:
        raise ProfileError(
            f"larger than {_size(limit)}: not a {what} (set the environment variable "
            f"{cap.env} to raise the limit)",
            file=str(path),
        )
    return data


def read_text(
    path: Path,
    *,
    cap: Cap = INPUT_BYTES,
    what: str = "file",
    undecodable: str = "not UTF-8 text (byte at offset {offset})",
) -> str:
    """The UTF-8 text of ``path`` (a byte-order mark skipped), bounded as :func:`read_bytes`.

    ``undecodable`` is the message for bytes that are not UTF-8; ``{offset}`` in it is replaced
    by the offset of the first bad byte.
    """
    data = read_bytes(path, cap=cap, what=what)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ProfileError(undecodable.format(offset=exc.start), file=str(path)) from None


def json_depth(data: str | bytes) -> int:
    """The deepest nesting of arrays and objects in JSON text [-] (brackets inside strings are
    not counted; the text need not be valid JSON)."""
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    if raw.count(b"[") + raw.count(b"{") <= MAX_JSON_DEPTH:
        return raw.count(b"[") + raw.count(b"{")
    import numpy as np

    body = np.frombuffer(_STRING.sub(b'""', raw), dtype=np.uint8)
    step = (body == ord("[")).astype(np.int64) + (body == ord("{"))
    step -= (body == ord("]")).astype(np.int64) + (body == ord("}"))
    return int(np.cumsum(step).max(initial=0))


def loads_json(text: str | bytes, *, file: str, constants: bool = False) -> Any:
    """Parse JSON text, nested at most :data:`MAX_JSON_DEPTH` deep.

    ``constants`` allows ``NaN`` and ``Infinity`` (off: they are not JSON numbers).

    Raises
    ------
    ProfileError
        For text that is not JSON, is nested too deep, or holds a non-JSON constant.
    """
    if json_depth(text) > MAX_JSON_DEPTH:
        raise ProfileError(f"nested deeper than {MAX_JSON_DEPTH} levels: not accepted", file=file)
    try:
        if constants:
            return json.loads(text)
        return json.loads(text, parse_constant=_no_constant)
    except json.JSONDecodeError as exc:
        raise ProfileError(f"not JSON: {exc.msg}", file=file, line=exc.lineno) from None
    except (UnicodeDecodeError, RecursionError) as exc:
        raise ProfileError(f"not JSON: {type(exc).__name__}", file=file) from None


def _no_constant(name: str) -> Any:
    raise json.JSONDecodeError(f"{name} is not a JSON number", name, 0)


def _size(n_bytes: int) -> str:
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n_bytes >= size and n_bytes % size == 0:
            return f"{n_bytes // size} {unit}"
    return f"{n_bytes:,} bytes"
