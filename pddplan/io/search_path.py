"""The profile search path: which file each profile name resolves to (user directories first,
then ``PDDPLAN_PROFILES``, then the bundled set), and the scenarios on it.

A module of its own, without the schemas: ``profiles list`` on a warm cache, shell completion
and error messages find files without importing pydantic or numpy. The registry that also loads
and validates profiles (:class:`pddplan.io.loader.Registry`) is this class with a ``load``.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from pddplan.defaults import KIND_DIRS as KIND_DIRS  # re-exported
from pddplan.errors import NotFoundError, did_you_mean
from pddplan.io.bundled import bundled_profiles_dir

ENV_VAR = "PDDPLAN_PROFILES"

_S = TypeVar("_S", bound="SearchPath")


#: Suffixes that make a workload value a file path rather than a profile name.
WORKLOAD_FILE_SUFFIXES = (".yaml", ".yml")


def is_workload_path(value: str) -> bool:
    """Whether a scenario's ``workload`` value (or ``--set workload=...``) names a file rather
    than a workload profile: it ends in ``.yaml``/``.yml`` or contains a path separator.

    Profile names are file stems, so they never do.
    """
    seps = {"/", os.sep} | ({os.altsep} if os.altsep else set())
    return value.lower().endswith(WORKLOAD_FILE_SUFFIXES) or any(s in value for s in seps)


@dataclass
class SearchPath:
    """Profile files by kind and name, from user directories first, then the bundled set.

    A user profile with the same name as a bundled one shadows it; ``profiles list`` shows
    which file each name resolves to.
    """

    dirs: list[Path] = field(default_factory=list)

    @classmethod
    def default(cls: type[_S], extra: Iterable[Path] = ()) -> _S:
        dirs: list[Path] = [Path(p) for p in extra]
        env = os.environ.get(ENV_VAR, "")
        dirs += [Path(p) for p in env.split(os.pathsep) if p]
        for d in dirs:
            if not d.is_dir():
                raise NotFoundError(f"profiles directory not found: {d}")
        dirs.append(bundled_profiles_dir())
        return cls(dirs=dirs)

    def index(self, kind: str) -> dict[str, Path]:
        """Profile names of a kind and the files they resolve to (listed once per search path)."""
        cache = self.__dict__.setdefault("_index_cache", {})
        if kind not in cache:
            cache[kind] = self._scan(kind)
        return cache[kind]

    def _scan(self, kind: str) -> dict[str, Path]:
        sub = KIND_DIRS[kind]
        found: dict[str, Path] = {}
        for d in self.dirs:
            for p in sorted((d / sub).glob("*.yaml")) if (d / sub).is_dir() else []:
                found.setdefault(p.stem, p)
        return found

    def path(self, kind: str, name: str, *, base_dir: Path | None = None, origin: str = "") -> Path:
        """The file of the ``kind`` profile ``name``; a workload may also be named by its file
        (:func:`is_workload_path`), relative to ``base_dir`` (default: the working directory).

        ``origin`` says where the value was given (``workload: in scen.yaml``), for the message.

        Raises
        ------
        NotFoundError
            no such profile (with a did-you-mean), or no such workload file.
        """
        if kind == "workload" and is_workload_path(name):
            return self._workload_file(name, base_dir, origin)
        idx = self.index(kind)
        if name not in idx:
            hint = did_you_mean(name, idx)
            if kind == "workload":
                hint += " (a path to a workload file, FILE.yaml, is also accepted)"
            raise NotFoundError(f"no {kind} profile named {name!r}{hint}")
        return idx[name]

    @staticmethod
    def _workload_file(value: str, base_dir: Path | None, origin: str) -> Path:
        p = Path(value).expanduser()
        if not p.is_absolute() and base_dir is not None:
            p = base_dir / p
        if not p.is_file():
            where = [f"looked for {p}"] if str(p) != value else []
            where += [origin] if origin else []
            tail = f" ({'; '.join(where)})" if where else ""
            raise NotFoundError(f"{value}: workload file not found{tail}")
        return p

    def find_any(self, name: str) -> tuple[str, Path]:
        hits = [(k, self.index(k)[name]) for k in KIND_DIRS if name in self.index(k)]
        if not hits:
            names = [n for k in KIND_DIRS for n in self.index(k)]
            raise NotFoundError(f"no profile named {name!r}{did_you_mean(name, names)}")
        return hits[0]

    def scenarios(self) -> dict[str, Path]:
        """Scenario names and their files: each directory's ``scenarios/``, then (in a source
        checkout) the example scenarios, which the wheel bundles under ``scenarios/``."""
        found: dict[str, Path] = {}
        dirs = [d / "scenarios" for d in self.dirs]
        examples = bundled_profiles_dir().parent / "examples"
        if bundled_profiles_dir().name == "profiles" and examples.is_dir():
            dirs.append(examples)
        for d in dirs:
            for p in sorted(d.glob("*.yaml")) if d.is_dir() else []:
                found.setdefault(p.stem, p)
        return found

    def scenario_path(self, name_or_path: str | None) -> Path:
        """A scenario given as a file path, or by name (:meth:`scenarios`)."""
        if name_or_path is None:
            name_or_path = "default"
        if not str(name_or_path).strip():
            raise NotFoundError("no scenario named '' (give a name or a file)")
        p = Path(name_or_path)
        if p.suffix in (".yaml", ".yml") or p.exists():
            if not p.is_file():
                from pddplan.io.files import unreadable

                raise unreadable(p, "scenario file")
            return p
        known = self.scenarios()
        if name_or_path in known:
            return known[name_or_path]
        hint = did_you_mean(name_or_path, known) or f" (bundled: {', '.join(known)})"
        raise NotFoundError(f"no scenario file or bundled scenario named {name_or_path!r}{hint}")
