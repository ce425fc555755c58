"""Where the profiles shipped with pddplan are (a module of its own: an error message asks
for it without loading the schemas)."""

from __future__ import annotations

from pathlib import Path


def bundled_profiles_dir() -> Path:
    """The profiles shipped with pddplan: inside the wheel, or the source checkout's folder."""
    package = Path(__file__).resolve().parent.parent  # pddplan/
    inside = package / "_profiles"
    if inside.is_dir():
        return inside
    return package.parent / "profiles"
