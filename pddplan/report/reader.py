"""Text for a reader without the repository: the procurement page's one rewrite.

The profiles' sources, the warnings and the notes are written for someone who has pddplan and
its reference files at hand: they cite ``accelerators.md``, ``profiles/chips/h800-sxm.yaml``
or "issue 12", and advise "check with `pddplan simulate`". :func:`for_reader` turns such
pointers into words a procurement reader can use: a reference file becomes its title,
publisher and date (:data:`REFERENCES`), a profile file the profile it names, an issue number
goes, and a command becomes what it would do (:data:`COMMAND_WORDS`). :data:`FORBIDDEN` lists
what must never reach the page; a test renders every bundled scenario against it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any

from pddplan.results import Report

#: What a page for a reader must not show: file names, issue numbers, commands and flags.
FORBIDDEN: list[str] = [
    r"\.md\b",
    r"\bissue \d+",
    r"`pddplan ",
    r"\bpddplan (?:solve|simulate|calibrate|robust|sweep|bathtub|breakeven|report|step)\b",
    r"\.py\b",
    r"\.ya?ml\b",
    r"\.csv\b",
    r"(?<![\w-])--[a-z][\w-]*",
]


@dataclass(frozen=True)
class Citation:
    """A reference document as a reader can look for it."""

    title: str
    publisher: str
    date: str | None = None

    def __str__(self) -> str:
        return f"'{self.title}' ({self.flat()})"

    def flat(self) -> str:
        """Publisher and date, comma-separated (for a citation already in parentheses)."""
        return f"{self.publisher}, {self.date}" if self.date else self.publisher


#: The reference documents the profiles cite by file name (no date: none is given).
REFERENCES: dict[str, Citation] = {
    "accelerators.md": Citation(
        "Accelerator facts for chip profiles",
        "pddplan reference notes from vendor datasheets and public price quotes",
    ),
    "models.md": Citation(
        "Model facts for model profiles",
        "pddplan reference notes from the models' published configurations",
    ),
    "validation-sources.md": Citation(
        "Public measurements a planner can be validated against", "pddplan reference notes"
    ),
    "pdd-brief.md": Citation(
        "PDD: Unleashing Economical And Flexible Heterogeneous LLM Inference Via "
        "Cross-Datacenter Prefill-Decode Disaggregation",
        "technical report and an interview on it, as summarised for pddplan",
    ),
    "pdd-brief-handover.csv": Citation(
        "hand-over microbenchmark", "the PDD technical report, as summarised for pddplan"
    ),
}

#: What each command would do, in words (a reader has no pddplan to run).
COMMAND_WORDS: dict[str, str] = {
    "simulate": "a request-by-request simulation of this plan",
    "calibrate": "a calibration against measured transfers",
    "robust": "a study of the estimates over their plausible ranges",
    "sweep": "a sweep of the inputs",
    "bathtub": "the return against hit rate",
    "breakeven": "a break-even study",
    "solve": "a new plan",
    "report": "this report",
    "step": "a study of one engine step",
}

#: The advice a closed-form warning ends in, for a reader.
ADVICE = COMMAND_WORDS["simulate"] + " is advised"

_KINDS = {
    "chips": "chip",
    "models": "model",
    "links": "link",
    "workloads": "workload",
    "scenarios": "scenario",
}
_DOCS = {"links": "the line model", "robust": "the robustness study", "limits": "input limits"}

_RULES: list[tuple[re.Pattern[str], Any]] = [
    # "... and check it with `pddplan simulate --plan plan.json`", "check with `...`"
    (
        re.compile(
            r"write the plan with `pddplan solve[^`]*`[^;`]*? and check it with `pddplan "
            r"simulate[^`]*`"
        ),
        ADVICE,
    ),
    (re.compile(r"(?:check|confirm|verify)(?: it)? with `pddplan simulate[^`]*`"), ADVICE),
    # a source fitted by a command: "pddplan calibrate: scipy ..."
    (re.compile(r"\bpddplan (\w+):"), lambda m: f"{_words(m.group(1)).capitalize()}:"),
    (re.compile(r"`pddplan (\w+)[^`]*`"), lambda m: _words(m.group(1))),
    (re.compile(r"\bpddplan (\w+)(?: --?[a-z][\w-]*(?:=\S+)?)*"), lambda m: _command(m)),
    # issue numbers: "(issue 12)", "issue #12, "
    (re.compile(r"\s*\((?:see )?issues? #?\d+(?:\s*(?:,|and)\s*#?\d+)*\)"), ""),
    (re.compile(r"\b(?:see )?issues? #?\d+(?:\s*(?:,|and)\s*#?\d+)*[,;:]?\s*"), ""),
    # profile files: "profiles/chips/h800-sxm.yaml" -> "the h800-sxm chip profile"
    (
        re.compile(r"(?:profiles/)?\b(chips|models|links|workloads|scenarios)/([\w.-]+)\.ya?ml\b"),
        lambda m: f"the {m.group(2)} {_KINDS[m.group(1)]} profile",
    ),
    (re.compile(r"\bprofiles/README\.md\b"), "the profile conventions"),
    (re.compile(r"\bexamples/([\w-]+)\.ya?ml\b"), lambda m: f"the {m.group(1)} scenario"),
    # reference files by name, wherever they sit: in parentheses, or in the running text
    (
        re.compile(r"\((?:[\w./-]*/)?([\w-]+\.(?:md|csv))\b([^()]*)\)"),
        lambda m: f"({'; '.join(filter(None, (_reference(m[1], flat=True), m[2].strip())))})",
    ),
    (
        re.compile(r"(?:[\w./-]*/)?([\w-]+\.(?:md|csv))\b(?: \(pddplan reference table\))?"),
        lambda m: _reference(m.group(1)),
    ),
    # flags left over: "(--no-reprovision)" goes; a bare flag is named in words
    (re.compile(r"\s*\(--[a-z][\w-]*(?:[ =][^)]*)?\)"), ""),
    (re.compile(r"(?<![\w-])--([a-z][\w-]*)"), lambda m: f"the {m.group(1)} option"),
    (re.compile(r"[\w./-]+\.py\b"), "pddplan's code"),
]


def _command(m: re.Match[str]) -> str:
    return _words(m.group(1)) if m.group(1) in COMMAND_WORDS else m.group(0)


def _words(cmd: str) -> str:
    return COMMAND_WORDS.get(cmd, "a further pddplan study")


def _reference(name: str, flat: bool = False) -> str:
    """A reference file's citation (in parentheses already: ``flat``, without its own)."""
    if name in REFERENCES:
        c = REFERENCES[name]
        return f"'{c.title}', {c.flat()}" if flat else str(c)
    stem, ext = name.rsplit(".", 1)
    if ext == "csv":
        return f"the measurements '{stem}'"
    if stem in _DOCS:
        return f"pddplan's documentation of {_DOCS[stem]}"
    return f"pddplan's notes '{stem.replace('-', ' ')}'"


def for_reader(text: str) -> str:
    """``text`` rewritten for a reader without the repository: no file names, issue numbers,
    commands or flags (:data:`FORBIDDEN`), each replaced by what it points at, in words."""
    from pddplan.report import GENERIC_ADVICE, short_warning

    out = short_warning(text, ADVICE) if text.endswith(GENERIC_ADVICE) else text
    for pattern, repl in _RULES:
        out = pattern.sub(repl, out)
    return out


def forbidden_in(text: str) -> list[str]:
    """The :data:`FORBIDDEN` matches in ``text`` (none on a page fit for a reader)."""
    return [m.group(0) for p in FORBIDDEN for m in re.finditer(p, text)]


def reader_report(rep: Report) -> Report:
    """``rep`` with every text (title, answer, notes, warnings, cells) :func:`for_reader`."""

    def cell(v: Any) -> Any:
        return for_reader(v) if isinstance(v, str) else v

    sections = [
        replace(s, rows=[{k: cell(v) for k, v in r.items()} for r in s.rows]) for s in rep.sections
    ]
    return replace(
        rep,
        title=for_reader(rep.title),
        sections=sections,
        answer=[for_reader(a) for a in rep.answer],
        notes=[for_reader(n) for n in rep.notes],
        warnings=[for_reader(w) for w in rep.warnings],
        warning_action=ADVICE,
    )
