"""The directory of pddplan's caches kept on disk: its place, and the checks that make it safe
to read (:mod:`pddplan.io.parse_cache`, :mod:`pddplan.io.code_cache`).

Where: ``$PDDPLAN_CACHE_DIR``, else ``$XDG_CACHE_HOME/pddplan/yaml``, else
``~/.cache/pddplan/yaml``. ``PDDPLAN_CACHE_DIR=off`` (or empty) turns the caches off. Its own
module, light to import: the command line reads it before it loads anything else.
"""

from __future__ import annotations

import os
import stat
from functools import cache
from pathlib import Path

ENV_DIR = "PDDPLAN_CACHE_DIR"


@cache
def cache_dir() -> Path | None:
    """The cache's directory, created if need be; None when turned off or not usable."""
    env = os.environ.get(ENV_DIR)
    if env is not None and env.strip().lower() in ("", "off", "0", "none"):
        return None
    if env is not None:
        d = Path(env)
    else:
        base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
        d = Path(base) / "pddplan" / "yaml"
    try:
        d.mkdir(parents=True, exist_ok=True, mode=0o700)
        st = d.stat()
    except OSError:
        return None
    owner_ok = not hasattr(os, "getuid") or st.st_uid == os.getuid()
    if not owner_ok or st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return None  # someone else could plant a pickle there
    return d
