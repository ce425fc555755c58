"""A note printed with rich's emoji codes off where :func:`pddplan.report.may_hold_emoji_code`
says it holds none prints exactly as with them on."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from pddplan.report import may_hold_emoji_code

TEXTS = [
    "plain text",
    "- one colon: here",
    "- two colons: a: b",
    "ratio 1:2:3",
    "a :warning: sign",
    ":smile-emoji: and :smile-text:",
    "::",
    "url http://x:8080/a:b",
    "P: tp8 (16 chips); RLD: memory",
]


def _printed(text: str, emoji: bool) -> str:
    buf = io.StringIO()
    Console(file=buf, width=100, force_terminal=False, highlight=False).print(
        text, markup=False, emoji=emoji
    )
    return buf.getvalue()


@pytest.mark.parametrize("text", TEXTS)
def test_the_same_text_with_emoji_codes_on_or_as_decided(text: str) -> None:
    assert _printed(text, may_hold_emoji_code(text)) == _printed(text, True)


def test_only_text_with_a_code_shape_keeps_them_on() -> None:
    assert may_hold_emoji_code("a :warning: sign")
    assert not may_hold_emoji_code("- one colon: here")
    assert not may_hold_emoji_code("- two colons: a: b")
