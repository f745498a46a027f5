import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from mdblocks import all_blocks, docs_scale  # noqa: E402


def pytest_terminal_summary(terminalreporter):
    blocks = [b for b in all_blocks() if b.runnable]
    scale = docs_scale()
    skip = [b for b in blocks if b.marker == "skip"]
    long_ = [b for b in blocks if b.marker == "long"]
    not_run = skip + (long_ if scale != "full" else [])
    xfail = [b for b in blocks if b.marker == "xfail"]
    tr = terminalreporter
    tr.write_sep("-", "documentation blocks (README.md, docs/*.md)")
    tr.write_line(
        f"BEHAVSIM_DOCS_SCALE={scale}: {len(blocks)} shell/Python blocks; "
        f"{len(blocks) - len(not_run)} run in the docs tests ({len(xfail)} of them expected to fail), "
        f"{len(not_run)} marked not run ({len(skip)} skip, "
        f"{len(long_) if scale != 'full' else 0} long)"
    )
    for b in not_run:
        tr.write_line(f"  not run: {b.id} [{b.marker}] {b.reason}")
    for b in xfail:
        tr.write_line(f"  xfail:   {b.id} {b.reason}")
