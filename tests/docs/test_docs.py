"""Every documented step runs as written: the docs' blocks, page by page, in order.

Each page gets a scratch folder (the working directory of its blocks) and one Python namespace
shared by its Python blocks, like a reader typing them into one session. Shell blocks run in
``bash -euo pipefail`` with the environment's ``behavsim`` first on ``PATH``. The marker
convention and the output matching are described in ``tests/docs/mdblocks.py``; the counts of
run and not-run blocks are printed at the end of the session (tests/docs/conftest.py).
Run only these: ``bash run.sh test tests/docs`` (``BEHAVSIM_DOCS_SCALE=full`` adds the long blocks).
"""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
import traceback
from pathlib import Path

import pytest
from mdblocks import PAGES, ROOT, all_blocks, console_commands, docs_scale, output_matches, parse_page

BLOCKS = [b for b in all_blocks() if b.runnable]
TIMEOUT = 900
_pages: dict[str, dict] = {}


def _page_state(page: str, tmp_path_factory) -> dict:
    if page not in _pages:
        scratch = tmp_path_factory.mktemp(page.replace("/", "-").replace(".md", ""))
        _pages[page] = {"dir": scratch, "ns": {"__name__": "__docs__"}, "failed": None}
    return _pages[page]


def _env() -> dict:
    env = dict(os.environ)
    bindir = str(Path(sys.executable).parent)
    env["PATH"] = bindir + os.pathsep + env.get("PATH", "")
    env["PYTHONPATH"] = os.pathsep.join(p for p in [env.get("PYTHONPATH", ""), str(ROOT)] if p)
    env.setdefault("BEHAVSIM_DOCS_SCALE", docs_scale())
    env["COLUMNS"] = "100"
    return env


def _run_shell(script: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script],
        cwd=cwd,
        env=_env(),
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        timeout=TIMEOUT,
        stdin=subprocess.DEVNULL,
    )


def _run_python(code: str, block, state: dict) -> str:
    out = io.StringIO()
    old = Path.cwd()
    os.chdir(state["dir"])
    sys.path.insert(0, str(state["dir"]))
    try:
        with contextlib.redirect_stdout(out):
            exec(compile(code, f"{block.page}:{block.line}", "exec"), state["ns"])
    except Exception:
        raise AssertionError(
            f"{block.id} raised:\n{traceback.format_exc(limit=-3)}\noutput so far:\n{out.getvalue()}"
        ) from None
    finally:
        sys.path.remove(str(state["dir"]))
        os.chdir(old)
    return out.getvalue()


def _check_output(block, expected: str, actual: str, what: str) -> None:
    assert output_matches(expected, actual), (
        f"{block.id}: the output of {what} differs from the page.\n--- page:\n{expected}--- actual:\n{actual}"
    )


def run_block(block, state: dict) -> None:
    if block.lang == "python":
        printed = _run_python(block.text, block, state)
        if block.output is not None:
            _check_output(block, block.output.text, printed, "this block")
    elif block.lang in ("bash", "sh"):
        run = _run_shell(block.text, state["dir"])
        assert run.returncode == 0, f"{block.id} exited with {run.returncode}:\n{run.stdout}"
        if block.output is not None:
            _check_output(block, block.output.text, run.stdout, "this block")
    else:  # console: `$ command` lines, each followed by the output it shows
        for command, expected in console_commands(block.text):
            run = _run_shell(command, state["dir"])
            _check_output(block, expected, run.stdout, f"`{command.splitlines()[0]}`")


@pytest.mark.parametrize("block", BLOCKS, ids=[b.id for b in BLOCKS])
def test_block(block, tmp_path_factory, request):
    state = _page_state(block.page, tmp_path_factory)
    if block.marker == "skip":
        pytest.skip(f"not run: {block.reason}")
    if block.marker == "long" and docs_scale() != "full":
        pytest.skip(f"not run at BEHAVSIM_DOCS_SCALE={docs_scale()} (long: {block.reason})")
    if state["failed"]:
        pytest.skip(f"an earlier block of the page failed ({state['failed']})")
    if block.marker == "xfail":
        request.node.add_marker(pytest.mark.xfail(reason=block.reason, strict=True, raises=AssertionError))
        run_block(block, state)
        return
    try:
        run_block(block, state)
    except BaseException:
        state["failed"] = block.id
        raise


@pytest.mark.parametrize("page", PAGES)
def test_page_is_well_formed(page):
    """Every fence names a known language, markers carry reasons, output blocks follow a block."""
    _, problems = parse_page(page)
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("page", PAGES)
def test_skipped_python_still_compiles(page):
    for block in parse_page(page)[0]:
        if block.lang == "python" and block.marker in ("skip", "long"):
            compile(block.text, block.id, "exec")


def _anchors(path: Path) -> set[str]:
    """GitHub's heading anchors of a Markdown page."""
    out, fenced = set(), False
    for line in path.read_text(encoding="utf8").splitlines():
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
        elif not fenced and line.startswith("#"):
            title = line.lstrip("#").strip().lower()
            out.add("".join(c for c in title if c.isalnum() or c in " -_").replace(" ", "-"))
    return out


@pytest.mark.parametrize("page", PAGES)
def test_page_stands_on_the_repository_alone(page):
    """Links resolve inside the repository; no document outside it is cited."""
    path = ROOT / page
    text = path.read_text(encoding="utf8")
    problems = []
    for word in ("SPEC.md", "SPEC §", "PYDIAL-NOTES", "/work/"):
        if word in text:
            problems.append(f"cites {word!r}, which is not in the repository")
    for target in __import__("re").findall(r"\]\(([^)\s]+)\)", text):
        if target.startswith(("http://", "https://", "mailto:")):
            continue
        file, _, anchor = target.partition("#")
        dest = (path.parent / file).resolve() if file else path
        if not dest.exists():
            problems.append(f"link to {target!r}: no such file")
        elif anchor and dest.suffix == ".md" and anchor not in _anchors(dest):
            problems.append(f"link to {target!r}: no such heading")
    assert not problems, f"{page}: " + "; ".join(problems)


def test_output_matching_rules():
    assert output_matches("a … s\n...\nend\n", "a 0.31 s\nx\ny\nend  \n\n")
    assert output_matches("a\n...\n", "a\n")
    assert not output_matches("a … s\n", "a 0.31 s\nmore\n")  # every line is accounted for
    assert not output_matches("TMR 0.679\n", "TMR 0.680\n")
    assert console_commands("$ x \\\n  --y\nout\n$ z\n") == [("x \\\n  --y", "out\n"), ("z", "")]
