"""Write a profile as YAML, checked by reading it back as the loader would."""

from __future__ import annotations

from pathlib import Path
from typing import Any

CHIP_PROFILE_HEADER = (
    "# Calibrated chip profile written by `pddplan calibrate` (format: profiles/README.md).\n"
    "# Only the derates differ from the chip it was fitted from; see derates.source.\n"
)
LINK_PROFILE_HEADER = (
    "# Calibrated link profile written by `pddplan calibrate --link` (format: profiles/README.md).\n"
    "# Only the fitted keys differ from the link it was fitted from; see source.\n"
)


def write_profile(
    path: Path, data: dict[str, Any], kind: str = "chip", header: str = CHIP_PROFILE_HEADER
) -> None:
    """Write ``header`` and ``data`` as YAML to ``path`` (its folder made if missing), then
    load it back as a profile of ``kind``.

    Raises
    ------
    OSError : the file cannot be written.
    ProfileError : the loader rejects what was written.
    """
    import yaml

    from pddplan.io.loader import load_file

    text = header + yaml.safe_dump(
        data, sort_keys=False, allow_unicode=True, width=100, default_flow_style=False
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    load_file(path, kind)
