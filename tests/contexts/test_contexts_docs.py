"""The Python snippets of docs/contexts.md run."""

import re
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "contexts.md"


def snippets():
    return re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), flags=re.S)


def test_doc_has_snippets():
    assert len(snippets()) >= 2


@pytest.mark.parametrize("i", range(2))
def test_snippet_runs(i, capsys):
    exec(compile(snippets()[i], f"{DOC}:snippet{i}", "exec"), {})
