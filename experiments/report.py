"""One self-contained HTML report of a study run (``behavsim report RUN_DIR -o report.html``), made
of sections.

:func:`build_report` reads the run directory written by the study runner (``manifest.json``,
``results/*.csv``, ``results/tests.json``, ``figures/*``) and writes ONE HTML file with the
building blocks of :mod:`behavsim.report`: inline CSS, figures embedded as ``data:`` images, no
fonts, scripts or styles from elsewhere (a Content-Security-Policy in the page forbids any network
access at view time). The same run directory always gives byte-identical HTML: nothing time- or
machine-dependent is written, the ``created`` time comes from the manifest.

A :class:`Section` declares, once, everything the page needs of it: its key (the anchor), title,
place (``order``), the run-folder files it shows and why, the figures that are its own (globs of
their paths) and how it renders. Sections are registered in the entry-point group
``behavsim.report_sections`` (the built-in ones in ``setup.cfg``: :mod:`experiments.sections`,
and the families' own, e.g. :mod:`experiments.e2e`) or with :func:`register_section`. A section
is written only where the run has something for it (one of its files, or one of its figures);
the Run section names what the run does not have. The page answers in a few screens: the answers
first, then per question of the paper one figure with its short table; everything longer is
folded in ``<details>``. Rewards, context sets and trials are listed in the paper's order (the
config's ``rewards``, TS before IQ), whatever the order of the CSV rows. The page prints on A4.

The ``behavsim report`` command is registered through the entry-point group
``behavsim.commands`` (``report = experiments.report:register_report``); the study's last stage
(``report``) writes ``RUN_DIR/report.html``.

Layout of RUN_DIR and the report's sections: ``docs/report.md``. A missing manifest or a damaged
CSV/JSON raises a :class:`~behavsim.BehavsimError` that names the file. A run folder the study wrote
(it has ``state.json``) is reported on only when every file ``state.json`` records still has its
digest (:meth:`RunFolder.problems <experiments.runfolder.RunFolder.problems>`), its training
results are there and every figure the manifest lists is readable; else one error lists what is
missing or changed.
"""

from __future__ import annotations

import argparse
import json
import os
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fnmatch import fnmatch
from pathlib import Path
from typing import Any

import pandas as pd

from behavsim import ConfigError, TableFormatError
from behavsim.report import (
    Figure,
    escape,
    figures_html,
    fmt_int,
    load_figure,
    page,
    score_columns,
    to_float,
    write_html,
)
from experiments.registry import OrderedPlugins
from experiments.runfolder import RESULT_COLUMNS, TRAIN_RESULTS, RunFolder
from experiments.study import Stage, Study

__all__ = [
    "Section",
    "Report",
    "report_sections",
    "register_section",
    "list_report_sections",
    "build_report",
    "register_report",
    "REPORT",
    "sort_rows",
    "rank_set",
    "fold",
    "plural",
    "figures_block",
]

PAPER_REWARDS = ("ts", "iq")  # the paper's order, when the manifest has no config
_NUMERIC = {"dialogues", "n_seeds", "tsr", "aiq", "adl", "seed", "n", "mean_reward", "turn", "rank", "checkpoint"}
#: Problems of a run folder named one by one in the report's refusal (the rest are counted).
_SHOW_PROBLEMS = 6


class Report:
    """The run folder as the report reads it (lazily; every read error names the file), the
    rewards in the paper's order, and the sections the run does not have (:attr:`absent`)."""

    def __init__(self, run_dir: Path):
        self.run = RunFolder(run_dir)
        self.dir = run_dir
        if not run_dir.is_dir():
            raise ConfigError(f"run directory {str(run_dir)!r} does not exist or is not a directory")
        mpath = run_dir / "manifest.json"
        if not mpath.is_file():
            raise ConfigError(
                f"{str(run_dir)!r} is not a run directory: {mpath} is missing "
                "(the study runner writes it; pass the folder that holds manifest.json)"
            )
        self.manifest = self._json(mpath)
        if not isinstance(self.manifest, dict):
            raise TableFormatError(f"{mpath}: expected a JSON object, got {type(self.manifest).__name__}")
        cfg = self.manifest.get("config")
        rewards = cfg.get("rewards") if isinstance(cfg, dict) else None
        #: the rewards in the paper's order: the config's, else TS before IQ
        self.rewards: list[str] = [str(r) for r in rewards] if isinstance(rewards, list) else list(PAPER_REWARDS)
        self.absent: list[tuple[str, str]] = []  # (section heading, why) of the sections left out
        self._check_study_files()

    def _check_study_files(self) -> None:
        """A folder the study wrote (it has ``state.json``) is reported on only when every file
        ``state.json`` records still has its digest, the training results are there and every
        figure the manifest lists is there and readable; else one error lists what is wrong."""
        if not (self.dir / "state.json").exists():
            return
        problems = self.run.problems()
        named = {p.split(" ", 1)[0] for p in problems}
        wanted = [f"results/{name}" for name in TRAIN_RESULTS]
        listed = self.manifest.get("figures")
        for item in listed if isinstance(listed, list) else []:
            rel = item.get("file") if isinstance(item, dict) else item
            if isinstance(rel, str):
                wanted.append(rel)
        for rel in wanted:
            if rel in named:
                continue
            named.add(rel)
            path = self.dir / rel
            if not path.is_file():
                problems.append(f"{rel} is missing")
            elif rel.lower().endswith((".svg", ".png")):
                problem = load_figure(path, rel, "", "").problem
                if problem:
                    problems.append(f"{rel} is damaged ({problem})")
        if problems:
            shown = "; ".join(problems[:_SHOW_PROBLEMS])
            more = f"; and {len(problems) - _SHOW_PROBLEMS} more" if len(problems) > _SHOW_PROBLEMS else ""
            name = self.manifest.get("config_name", "CONFIG")
            raise TableFormatError(
                f"{self.dir}: no report of a run whose results are incomplete: {shown}{more}; run the study on "
                f"this folder again to redo them (behavsim reproduce --config {name} -o {self.dir})"
            )

    def path(self, name: str) -> Path:
        """``results/NAME``."""
        return self.dir / "results" / name

    @staticmethod
    def _json(path: Path) -> Any:
        try:
            return json.loads(path.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise TableFormatError(f"{path}: damaged JSON: {exc}") from None
        except OSError as exc:
            raise TableFormatError(f"{path}: cannot be read: {exc}") from None

    def json(self, name: str) -> Any | None:
        """``results/NAME`` parsed; None when absent."""
        path = self.path(name)
        return self._json(path) if path.is_file() else None

    def csv(
        self,
        name: str,
        *,
        scores: bool = False,
        required: Sequence[str] | None = None,
        numeric: Iterable[str] = (),
        path: Path | None = None,
    ) -> pd.DataFrame | None:
        """Read ``results/NAME`` (or ``path``; None when absent); strings stay strings, numbers are
        checked; ``required``: columns it must have (default: the study's, ``RESULT_COLUMNS``)."""
        path = self.path(name) if path is None else path
        if not path.is_file():
            return None
        try:
            df = pd.read_csv(path, dtype=str, keep_default_na=False, encoding="utf-8")
        except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError, ValueError) as exc:
            msg = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise TableFormatError(f"{path}: damaged CSV: {msg}") from None
        required = RESULT_COLUMNS.get(name, ()) if required is None else required
        missing = [c for c in required if c not in df.columns]
        if missing:
            raise TableFormatError(
                f"{path}: missing column(s) {', '.join(missing)}; found: {', '.join(map(str, df.columns)) or 'none'}"
            )
        num = {c for c in df.columns if c in _NUMERIC} | set(numeric)
        if scores:
            num |= set(score_columns(df))
            num |= {f"{s}_{e}" for s in score_columns(df) for e in ("lo", "hi") if f"{s}_{e}" in df.columns}
        for col in [c for c in df.columns if c in num]:
            df[col] = to_float(df[col], path, col)
        return df


@dataclass(frozen=True)
class Section:
    """One section of the report, declared once.

    ``render(report)`` gives its HTML (None: nothing to show), written below its figures.
    ``inputs``: the run-folder files it shows and why; a section with inputs or figure patterns is
    written only when one of its files or figures is there, and otherwise named in the Run section
    with ``absent`` (default: "no <first input>"). ``figures``: globs of the run-relative paths of the
    figures that are its own (a figure goes to the first section, in page order, that claims it);
    ``shows_figure(report, figure)``: which of them it embeds (default: all). ``last``: rendered
    after the others, so that it can name what they left out (the Run section).
    """

    key: str
    title: str
    order: int
    render: Callable[[Report], str | None]
    inputs: Mapping[str, str] = field(default_factory=dict)
    absent: str = ""
    figures: tuple[str, ...] = ()
    shows_figure: Callable[[Report, Figure], bool] | None = None
    last: bool = False

    def claims(self, rel: str) -> bool:
        """Whether the figure at ``rel`` (relative to the run folder) is this section's."""
        return any(fnmatch(rel, pattern) for pattern in self.figures)


#: The registered sections (entry-point group ``behavsim.report_sections``).
report_sections: OrderedPlugins[Section] = OrderedPlugins(
    "report section", "behavsim.report_sections", Section, lambda s: s.key
)


def register_section(section: Section) -> Section:
    """Add a section from code (a package adds one through the entry-point group
    ``behavsim.report_sections`` instead)."""
    return report_sections.add(section)


def list_report_sections() -> list[str]:
    """The registered sections' keys, in page order."""
    return [s.key for s in report_sections.ordered()]


# --------------------------------------------------------------------- helpers of the sections
def _rank_reward(rewards: Sequence[str], value: Any) -> str:
    v = str(value)
    return f"0{rewards.index(v):03d}" if v in rewards else f"1{v}"


def rank_set(rewards: Sequence[str], value: Any) -> str:
    """Sort key of a context set: C_col of each reward (in the rewards' order), their union, other
    collected sets, C_gen, the rest."""
    v = str(value)
    if v.startswith("ccol-") and v[5:] in rewards:
        return f"0{rewards.index(v[5:]):03d}"
    if v == "ccol-all":
        return "1"
    if v.startswith("ccol"):
        return f"2{v}"
    return f"3{v}" if v.startswith("cgen") else f"4{v}"


def _rank_kind(value: Any) -> str:
    v = str(value)
    order = ("convergence", "seeds", "rewards")
    return f"0{order.index(v)}" if v in order else f"1{v}"


def sort_rows(df: pd.DataFrame, keys: Sequence[str], rewards: Sequence[str] = PAPER_REWARDS) -> pd.DataFrame:
    """Rows sorted by ``keys``: rewards, context sets and comparison kinds in the paper's order
    (``rewards`` first, C_col before C_gen; convergence, seeds, rewards), numbers by value, other
    text alphabetically."""
    rankers = {
        "reward": lambda col: col.map(lambda v: _rank_reward(rewards, v)),
        "context_set": lambda col: col.map(lambda v: rank_set(rewards, v)),
        "kind": lambda col: col.map(_rank_kind),
    }

    def key(col: pd.Series) -> pd.Series:
        return rankers[str(col.name)](col) if col.name in rankers else col

    return df.sort_values(list(keys), key=key, kind="stable").reset_index(drop=True)


def fold(summary: str, body: str, cls: str = "") -> str:
    """``body`` folded under ``summary`` (both HTML): one click away, not printed unless opened."""
    c = f' class="{cls}"' if cls else ""
    return f"<details{c}><summary>{summary}</summary>\n{body}</details>\n"


def plural(n: int, word: str, words: str | None = None) -> str:
    return f"{fmt_int(n, grouped=True)} {word if n == 1 else (words or word + 's')}"


# ------------------------------------------------------------------------------------ figures
def _figure(report: Report, rel: Path, variants: dict[str, Path], title: str, sections: list[Section]) -> Figure:
    """A figure (the SVG when there is one, else the PNG) in the first section that claims it."""
    shown = (variants.get(".svg") or variants[".png"]) if variants else None
    path = rel.as_posix() if shown is None else shown.relative_to(report.dir).as_posix()
    section = next((s.key for s in sections if s.claims(path)), "")
    if shown is None:
        return Figure(file=path, title=title, section=section, problem="the file is missing")
    return load_figure(shown, path, title, section)


def _collect_figures(report: Report, sections: list[Section]) -> list[Figure]:
    """Figures listed in the manifest (in its order), then the other files of figures/ by name.

    One figure per stem: an SVG is preferred to a PNG of the same name."""
    fig_dir = report.dir / "figures"
    on_disk: dict[str, dict[str, Path]] = {}
    if fig_dir.is_dir():
        for p in sorted(fig_dir.iterdir()):
            if p.is_file() and p.suffix.lower() in (".svg", ".png"):
                on_disk.setdefault(p.stem, {})[p.suffix.lower()] = p
    figs: list[Figure] = []
    seen: set[str] = set()
    listed = report.manifest.get("figures") or []
    mpath = report.dir / "manifest.json"
    if not isinstance(listed, list):
        raise TableFormatError(f"{mpath}: 'figures' must be a list, got {type(listed).__name__}")
    for item in listed:
        if isinstance(item, str):
            item = {"file": item}
        if not isinstance(item, dict) or not isinstance(item.get("file"), str):
            raise TableFormatError(f"{mpath}: each entry of 'figures' needs a 'file', got {item!r}")
        rel = Path(item["file"])
        if rel.stem in seen:
            continue
        seen.add(rel.stem)
        variants = on_disk.get(rel.stem, {}) if rel.parent == Path("figures") else {}
        if not variants and (report.dir / rel).is_file() and rel.suffix.lower() in (".svg", ".png"):
            variants = {rel.suffix.lower(): report.dir / rel}
        title = str(item.get("title") or rel.stem.replace("_", " "))
        figs.append(_figure(report, rel, variants, title, sections))
    for stem, variants in on_disk.items():
        if stem not in seen:
            seen.add(stem)
            figs.append(_figure(report, Path("figures") / stem, variants, stem.replace("_", " "), sections))
    return figs


def figures_block(figs: Sequence[Figure], rewards: Sequence[str] = ()) -> str:
    """One figure shown — the first listed that names the paper's first reward (e.g. ``per_turn_ts``,
    or an older run's ``convergence_ccol-ts``), else the first listed; the others one click away."""
    if not figs:
        return ""
    first = rewards[0] if rewards else None
    main = next((f for f in figs if first in re.split(r"[-_ ]", Path(f.file).stem)), figs[0])
    out = figures_html([main])
    rest = [f for f in figs if f is not main]
    if rest:
        names = "; ".join(escape(f.title) for f in rest)
        out += fold(f"{plural(len(rest), 'more figure')}: {names}", figures_html(rest), "more-figures")
    return out


# --------------------------------------------------------------------------------------- page
def _section_html(report: Report, section: Section, figs: list[Figure]) -> str | None:
    """The section's figures first, its own HTML below; None when the run has nothing for it."""
    shown = [f for f in figs if section.shows_figure is None or section.shows_figure(report, f)]
    if section.inputs or section.figures:
        if not shown and not any((report.dir / name).is_file() for name in section.inputs):
            if section.inputs:
                why = section.absent or f"no {next(iter(section.inputs))}"
                report.absent.append((section.title.split(":")[0].split(" (")[0], why))
            return None
        return figures_block(shown, report.rewards) + (section.render(report) or "")
    return section.render(report)


def _render(report: Report) -> str:
    sections = report_sections.ordered()
    by_section: dict[str, list[Figure]] = {}
    for f in _collect_figures(report, sections):
        by_section.setdefault(f.section, []).append(f)
    bodies = {s.key: _section_html(report, s, by_section.get(s.key, [])) for s in sections if not s.last}
    bodies |= {s.key: _section_html(report, s, by_section.get(s.key, [])) for s in sections if s.last}
    name = report.manifest.get("config_name", report.dir.name)
    return page(
        f"behavsim report — {name}",
        [(s.key, s.title, body) for s in sections if (body := bodies[s.key]) is not None],
        "Written by <code>behavsim report</code> from the run directory's files only; self-contained (no network).",
    )


def build_report(run_dir: str | os.PathLike, output: str | os.PathLike | None = None) -> Path:
    """Write the HTML report of the run in ``run_dir``; return its path.

    ``output`` defaults to ``RUN_DIR/report.html``. Raises :class:`~behavsim.ConfigError` when
    ``run_dir`` is not a run directory (no ``manifest.json``) and
    :class:`~behavsim.TableFormatError` when one of its files is damaged (the message names it).
    """
    report = Report(Path(run_dir))
    text = _render(report)
    return write_html(text, Path(output) if output is not None else report.dir / "report.html")


def _report(study: Study) -> None:
    build_report(study.run.root, study.run.path("report.html"))  # its path: `behavsim reproduce`'s last line


#: The study's last stage: the report of the run folder, written again on every run.
REPORT = Stage(
    name="report",
    order=1000,
    title="report",
    run=_report,
    inputs={"manifest.json": "the run's config, signatures, context sets and figures"},
    outputs={"report.html": "the self-contained HTML report"},
    applies=lambda study: study.cfg.report,
)


# ------------------------------------------------------------------------------------------ CLI
def _cmd_report(args: argparse.Namespace) -> int:
    out = build_report(args.run_dir, args.output)
    print(out)
    return 0


def register_report(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``report RUN_DIR [-o report.html]`` to the ``behavsim`` command line."""
    p = subparsers.add_parser(
        "report",
        help="one self-contained HTML report of a study run",
        description="Write one self-contained HTML file (tables, figures, tests, "
        "signatures, config) from a run directory.",
    )
    p.add_argument("run_dir", metavar="RUN_DIR", help="the study's output folder (holds manifest.json)")
    p.add_argument("-o", "--output", metavar="FILE", help="HTML file to write (default: RUN_DIR/report.html)")
    p.set_defaults(func=_cmd_report)
    return p
