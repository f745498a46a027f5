"""The fenced blocks of README.md and docs/*.md, and how the docs tests treat them.

Every fence names its language. Blocks in ``python``, ``bash``, ``sh`` and ``console`` are run by
``tests/docs/test_docs.py``, page by page, in order, in a scratch folder per page. A marker
comment on the line right before a fence changes that (the reason is shown in the page):

``<!-- docs-test: skip (REASON) -->``
    not run (installs things, opens a browser, needs a model or a toolkit that is not shipped,
    or is a sketch); counted as not run.
``<!-- docs-test: long (REASON) -->``
    run only with ``BEHAVSIM_DOCS_SCALE=full`` (paper scale, minutes); otherwise not run.
``<!-- docs-test: xfail (REASON) -->``
    run, and expected to fail until the code catches up (strict: passing is an error).
``<!-- docs-test: output -->``
    this block (any language, usually ``text``) is the exact output of the block before it.

Expected output — a ``console`` block's lines after each ``$ command``, or an ``output`` block —
is compared line by line with what the command printed (stdout and stderr, trailing blanks
ignored): ``…`` inside a line matches any text (volatile parts such as timings or hashes) and a
line ``...`` matches any number of lines.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGES = ["README.md"] + sorted(f"docs/{p.name}" for p in (ROOT / "docs").glob("*.md"))

RUNNABLE = {"python", "bash", "sh", "console"}
LANGUAGES = RUNNABLE | {"text", "json", "toml", "csv"}
MARKER_KINDS = {"skip", "long", "xfail", "output"}
SCALES = ("ci", "full")

_FENCE = re.compile(r"^(?P<indent> *)(?P<fence>`{3,}|~{3,})(?P<info>.*)$")
_MARKER = re.compile(r"^\s*<!--\s*docs-test:\s*(?P<kind>[\w-]+)\s*(?:\((?P<reason>.*)\))?\s*-->\s*$")


@dataclass
class Block:
    page: str
    line: int  # 1-based line of the opening fence
    lang: str
    text: str
    marker: str | None = None  # skip, long, xfail, output
    reason: str = ""
    output: "Block | None" = field(default=None, repr=False)  # the output block that follows

    @property
    def id(self) -> str:
        return f"{self.page}:{self.line}"

    @property
    def runnable(self) -> bool:
        return self.lang in RUNNABLE and self.marker != "output"


def docs_scale() -> str:
    scale = os.environ.get("BEHAVSIM_DOCS_SCALE", "ci").strip().lower() or "ci"
    if scale not in SCALES:
        raise ValueError(f"BEHAVSIM_DOCS_SCALE: expected one of {', '.join(SCALES)}, got {scale!r}")
    return scale


def parse_page(page: str) -> tuple[list[Block], list[str]]:
    """The blocks of one page and the problems found (unclosed fence, unknown marker, ...)."""
    lines = (ROOT / page).read_text(encoding="utf8").splitlines()
    blocks: list[Block] = []
    problems: list[str] = []
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            mk = _MARKER.match(lines[i])
            if mk and not (i + 1 < len(lines) and _FENCE.match(lines[i + 1])):
                problems.append(f"{page}:{i + 1}: a docs-test marker must be right before a fence")
            i += 1
            continue
        fence, info = m.group("fence"), m.group("info").strip()
        start = i
        body: list[str] = []
        i += 1
        while i < len(lines) and not re.match(rf"^ *{re.escape(fence[0])}{{{len(fence)},}}\s*$", lines[i]):
            body.append(lines[i][len(m.group("indent")) :] if lines[i].startswith(m.group("indent")) else lines[i])
            i += 1
        if i >= len(lines):
            problems.append(f"{page}:{start + 1}: fence never closed")
        i += 1
        block = Block(page, start + 1, info.split()[0].lower() if info else "", "\n".join(body) + "\n")
        mk = _MARKER.match(lines[start - 1]) if start > 0 else None
        if mk:
            block.marker, block.reason = mk.group("kind"), (mk.group("reason") or "").strip()
            if block.marker not in MARKER_KINDS:
                problems.append(f"{block.id}: unknown docs-test marker {block.marker!r}")
            elif block.marker in ("skip", "long", "xfail") and not block.reason:
                problems.append(f"{block.id}: docs-test: {block.marker} needs a reason in parentheses")
        if block.lang not in LANGUAGES:
            problems.append(
                f"{block.id}: fence language {block.lang or '(none)'!r} is not one of {', '.join(sorted(LANGUAGES))}"
            )
        if block.marker == "output":
            prev = blocks[-1] if blocks else None
            if prev is None or not prev.runnable or prev.output is not None:
                problems.append(f"{block.id}: an output block must follow a runnable block")
            else:
                prev.output = block
        blocks.append(block)
    return blocks, problems


def all_blocks() -> list[Block]:
    return [b for page in PAGES for b in parse_page(page)[0]]


# --------------------------------------------------------------------------- output matching
def output_pattern(expected: str) -> re.Pattern:
    parts = []
    for line in expected.rstrip("\n").splitlines():
        if line.strip() == "...":
            parts.append(r"(?:[^\n]*\n)*?")
        else:
            parts.append(".*?".join(re.escape(p) for p in line.rstrip().split("…")) + r"\n")
    return re.compile("".join(parts))


def output_matches(expected: str, actual: str) -> bool:
    actual = "\n".join(l.rstrip() for l in actual.rstrip().splitlines()) + "\n"
    return output_pattern(expected).fullmatch(actual) is not None


def console_commands(text: str) -> list[tuple[str, str]]:
    """(command, expected output) pairs of a ``console`` block (``$ `` prompts, ``\\`` continuations)."""
    pairs: list[tuple[str, list[str]]] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("$ "):
            cmd = [line[2:]]
            while cmd[-1].endswith("\\") and i + 1 < len(lines):
                i += 1
                cmd.append(lines[i])
            pairs.append(("\n".join(cmd), []))
        elif pairs:
            pairs[-1][1].append(line)
        i += 1
    return [(c, "\n".join(out) + ("\n" if out else "")) for c, out in pairs]
