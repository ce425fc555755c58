from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAPER = ROOT / "examples" / "pdd-paper.yaml"


def paper_with(tmp_path: Path, block: str) -> Path:
    """examples/pdd-paper.yaml with its uncertainty: block replaced by ``block``."""
    text = PAPER.read_text()
    text = text.split("# pddplan robust:")[0].rstrip() + "\n" + block.strip() + "\n"
    path = tmp_path / "scenario.yaml"
    path.write_text(text)
    return path


@pytest.fixture
def scenario_with(tmp_path: Path):
    return lambda block: paper_with(tmp_path, block)
