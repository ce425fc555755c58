"""The results of ``profiles list``, ``profiles show`` and ``profiles validate``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pddplan.results.base import Report, Result, Row, Section


def flatten(prefix: str, obj: Any, out: list[Row]) -> None:
    """``obj`` (a profile as JSON data) as ``key``/``value`` rows with dotted keys."""
    if isinstance(obj, dict):
        for k, v in obj.items():
            flatten(f"{prefix}.{k}" if prefix else k, v, out)
    elif isinstance(obj, list) and obj and all(isinstance(v, dict) for v in obj):
        for i, v in enumerate(obj):
            flatten(f"{prefix}[{i}]", v, out)
    else:
        out.append(
            {"key": prefix, "value": obj if not isinstance(obj, list) else ", ".join(map(str, obj))}
        )


@dataclass(frozen=True)
class ProfileListResult(Result):
    """The profiles on the search path: per kind (``chips``, ``models`` ...), one row each."""

    profiles: dict[str, list[Row]]

    def report(self) -> Report:
        sections = [Section(kind, rows) for kind, rows in self.profiles.items()]
        return Report("pddplan profiles", sections, {"profiles": dict(self.profiles)})


@dataclass(frozen=True)
class ScenarioListResult(Result):
    """The scenarios usable by name (bundled, or in a ``--profiles`` directory)."""

    scenarios: list[Row]

    def report(self) -> Report:
        rows = self.scenarios
        return Report(
            "pddplan profiles: scenarios", [Section("scenarios", rows)], {"scenarios": rows}
        )


@dataclass(frozen=True)
class ProfileShowResult(Result):
    """One profile as written (JSON data) and, for a model, the SI numbers derived from it."""

    kind: str
    name: str
    file: str
    profile: dict[str, Any]
    derived: dict[str, Any] | None = None

    def report(self) -> Report:
        rows: list[Row] = []
        flatten("", self.profile, rows)
        sections = [Section(f"{self.kind} {self.name} ({self.file})", rows, key="profile")]
        payload: dict[str, Any] = {"kind": self.kind, "file": self.file, "profile": self.profile}
        if self.derived is not None:
            sections.append(
                Section("derived (SI)", [{"key": k, "value": v} for k, v in self.derived.items()])
            )
            payload["derived"] = self.derived
        return Report(f"pddplan profile {self.name}", sections, payload)


@dataclass(frozen=True)
class ScenarioShowResult(Result):
    """A scenario as resolved: its keys after overrides, the profiles it names and its chips
    (prices after the scenario's overrides)."""

    name: str
    file: str
    scenario: dict[str, Any]
    profiles: list[Row]
    chips: list[Row]

    def report(self) -> Report:
        rows: list[Row] = []
        flatten("", self.scenario, rows)
        sections = [
            Section(f"scenario {self.name} ({self.file})", rows, key="scenario"),
            Section("profiles", self.profiles, key="profiles"),
            Section("chips", self.chips, key="chips"),
        ]
        payload = {
            "kind": "scenario",
            "file": self.file,
            "scenario": self.scenario,
            "profiles": self.profiles,
            "chips": self.chips,
        }
        return Report(f"pddplan scenario {self.name}", sections, payload)


@dataclass(frozen=True)
class ValidateResult(Result):
    """One row per file validated; ``errors`` holds the message of each file that failed."""

    files: list[Row]
    errors: list[str] = field(default_factory=list)

    def report(self) -> Report:
        return Report("profile validation", [Section("files", self.files)], {"files": self.files})
