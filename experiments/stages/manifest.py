"""Stage ``manifest``: ``manifest.json`` — the config, the code version, the score signatures, the
context sets, the figures drawn and the wall time summed over every run on this folder."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

from behavsim import package_version
from experiments.study import Stage, Study

__all__ = ["MANIFEST", "code_version"]


def code_version() -> str:
    """``behavsim <version> (git <sha>)``: the installed version and, in a git checkout, the commit."""
    v = package_version("behavsim")
    try:
        sha = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=Path(__file__).parent,
            capture_output=True,
            text=True,
            timeout=10,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        sha = ""
    return f"behavsim {v}" + (f" (git {sha})" if sha else "")


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _short_meta(meta: dict) -> dict:
    """The builder parameters of a context set, without the bulky provenance (kept in its file)."""
    return {k: v for k, v in meta.items() if len(json.dumps(v, default=str)) <= 120}


def _manifest(study: Study) -> None:
    cfg, run = study.cfg, study.run
    prev = run.read_manifest()
    sets = run.context_sets
    run.write_manifest(
        {
            "config_name": cfg.name,
            "config": cfg.to_dict(),
            "code_version": code_version(),
            "created": prev["created"] if isinstance(prev.get("created"), str) else _now(),
            "signatures": json.loads(run.path("results/signatures.json").read_text()),
            "context_sets": {
                n: {"fingerprint": cs.fingerprint, "size": len(cs), "meta": _short_meta(cs.meta)}
                for n, cs in sets.items()
            },
            "figures": run.figures,
            "wall_seconds": round(prev.get("wall_seconds", 0.0) + study.clock.elapsed(), 1),
        }
    )


MANIFEST = Stage(
    name="manifest",
    order=900,
    title="manifest",
    run=_manifest,
    inputs={"results/signatures.json": "the score signatures", "contexts/": "the context sets"},
    outputs={"manifest.json": "config, code version, score signatures, context sets, figures, wall time"},
)
