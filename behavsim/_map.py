"""The behaviour map: many policies placed by how alike they behave.

:func:`behaviour_map` takes response tables of one context set (or their paths, or a
:func:`behavsim.compare` result with ``matrix=True``) and one score, and gives

* the **distances** d(a, b) = 1 − (s(a, b) + s(b, a)) / 2 — a score's pair mean, symmetrised by
  averaging both orders (every built-in score is symmetric already), with d(a, a) = 0;
* their **classical MDS** (Torgerson): B = −½·J·D²·J with J = I − 1/P, the coordinates of axis k
  are √λ_k times the k-th eigenvector of B (λ descending, negative λ count as 0). Points whose
  distances are Euclidean are recovered up to rotation and reflection. Each axis's sign is fixed
  so that its coordinate of largest magnitude is positive (the first such point on ties), so a
  rerun writes byte-identical coordinates;
* the **trials**: tables whose policy metadata agree on everything but ``id``, ``checkpoint`` and
  ``path`` are the checkpoints of one training run (as ``compare(pairs="consecutive")`` groups
  them), joined in checkpoint order in the figure; a table without a ``checkpoint`` is a policy
  of its own;
* a **dendrogram** of the final policies (each trial's last checkpoint and every policy of its
  own): average linkage (UPGMA) on the same distances.

:func:`write_map` writes ``map.csv`` (coordinates), ``distances.csv``, ``dendrogram.csv`` (the
merges), ``map.meta.json`` and the figures ``map.png/.svg`` and ``dendrogram.png/.svg``;
``behavsim map TABLES... -o DIR [--score TMR]`` is the command line. Fewer than three policies,
or a score undefined for some pair, is a :class:`~behavsim.ConfigError`.
"""

from __future__ import annotations

import argparse
import json
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ._comparison import Comparison
from ._engine import compare, trial_key
from ._errors import ConfigError
from ._inputs import PathLike, as_tables
from ._tables import ResponseTable
from .commands import add_model_options, score_options
from .plots import behaviour_map_plot, dendrogram_plot
from .scores import scores as score_registry

__all__ = ["classical_mds", "average_linkage", "behaviour_map", "BehaviourMap", "write_map", "register_map"]


def classical_mds(distances: Any, dims: int = 2) -> tuple[np.ndarray, np.ndarray]:
    """Classical (Torgerson) MDS of a symmetric distance matrix: ``(coordinates P×dims,
    eigenvalues of B in descending order)``; signs fixed as the module doc says."""
    d = np.asarray(distances, dtype=float)
    if d.ndim != 2 or d.shape[0] != d.shape[1] or d.shape[0] < 1:
        raise ConfigError(f"distances: expected a square matrix, got shape {d.shape}")
    if not np.isfinite(d).all():
        raise ConfigError("distances: the matrix has NaN or infinite entries")
    if not np.allclose(d, d.T, rtol=0, atol=1e-12) or (np.diag(d) != 0).any():
        raise ConfigError("distances: expected a symmetric matrix with a zero diagonal")
    n = d.shape[0]
    j = np.eye(n) - np.full((n, n), 1.0 / n)
    b = -0.5 * j @ (d * d) @ j
    b = (b + b.T) / 2
    values, vectors = np.linalg.eigh(b)
    order = np.argsort(-values, kind="stable")
    values, vectors = values[order], vectors[:, order]
    k = min(dims, n)
    coords = vectors[:, :k] * np.sqrt(np.clip(values[:k], 0.0, None))
    for axis in range(k):
        col = coords[:, axis]
        big = int(np.argmax(np.abs(col)))
        if col[big] < 0:
            coords[:, axis] = -col
    coords = coords + 0.0  # no negative zeros in the output
    if k < dims:
        coords = np.hstack([coords, np.zeros((n, dims - k))])
    return coords, values


def average_linkage(distances: Any) -> np.ndarray:
    """Average-linkage (UPGMA) clustering of a square distance matrix, in SciPy's linkage format
    (rows ``[cluster a, cluster b, distance, size]``)."""
    from scipy.cluster.hierarchy import linkage  # a measured start-up cost (seconds): loaded for a dendrogram
    from scipy.spatial.distance import squareform

    d = np.asarray(distances, dtype=float)
    if d.shape[0] < 2:
        raise ConfigError("a dendrogram needs at least two policies")
    return linkage(squareform(d, checks=False), method="average")


@dataclass
class BehaviourMap:
    """The result of :func:`behaviour_map`.

    ``coords``: one row per policy (input order) with ``id, trial, checkpoint, final, x, y``
    (``checkpoint`` NaN for a policy of its own). ``distances``: the P×P DataFrame of
    1 − symmetrised score. ``eigenvalues``: of the MDS's B, descending. ``finals``: the ids in the
    dendrogram, ``linkage`` its merges (``None`` with fewer than two finals).
    """

    score: str
    coords: pd.DataFrame
    distances: pd.DataFrame
    eigenvalues: np.ndarray
    finals: list[str]
    linkage: np.ndarray | None
    signature: str
    context_fingerprint: str
    n_contexts: int
    policies: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def explained(self) -> list[float]:
        """Each axis's share of the positive eigenvalues' sum."""
        pos = self.eigenvalues[self.eigenvalues > 0]
        total = float(pos.sum())
        k = sum(c in ("x", "y") or str(c).startswith("dim") for c in self.coords.columns)
        return [float(max(v, 0.0) / total) if total > 0 else 0.0 for v in self.eigenvalues[:k]]


def _trial_label(policy: Mapping[str, Any]) -> str:
    if "reward" in policy and "seed" in policy:
        return f"{policy['reward']}-seed{policy['seed']}"
    return str(policy.get("name") or policy["id"])


def _trials(ids: list[str], policies: Mapping[str, Mapping[str, Any]]) -> tuple[list[str], list[float], list[str]]:
    """Per policy its trial label and checkpoint (NaN: none), and the final policies' ids."""
    groups: dict[tuple, list[str]] = {}
    for pid in ids:
        meta = policies[pid]
        key = ("trial", trial_key(meta)) if "checkpoint" in meta else ("own", pid)
        groups.setdefault(key, []).append(pid)
    labels: dict[str, str] = {}
    finals = []
    used: dict[str, int] = {}
    for key, members in groups.items():
        if key[0] == "own":
            label = str(key[1])
        else:
            label = _trial_label(policies[members[0]])
            used[label] = used.get(label, 0) + 1
            if used[label] > 1:
                label = f"{label} ({used[label]})"
        for pid in members:
            labels[pid] = label
        last = max(members, key=lambda p: float(policies[p].get("checkpoint", -math.inf)))
        finals.append(last)
    checkpoints = [float(policies[p]["checkpoint"]) if "checkpoint" in policies[p] else math.nan for p in ids]
    finals = [p for p in ids if p in set(finals)]
    return [labels[p] for p in ids], checkpoints, finals


def behaviour_map(
    tables: Sequence[ResponseTable | PathLike] | Comparison,
    score: str = "TMR",
    *,
    score_options: Mapping[str, Mapping[str, Any]] | None = None,
    dims: int = 2,
    progress: bool | None = None,
    executor: Any = None,
) -> BehaviourMap:
    """The behaviour map of policies (see the module doc) from their response tables on one
    context set (or the tables' paths), or from a :class:`~behavsim.Comparison` with the matrices
    of ``score`` (``compare(..., matrix=True)``). ``executor``: where the score's distinct answer
    combinations are scored (:func:`behavsim.compare`)."""
    if isinstance(dims, bool) or not isinstance(dims, int) or dims < 1:
        raise ConfigError(f"dims: expected a positive integer, got {dims!r}")
    if not isinstance(score, str):
        raise ConfigError(f"score: expected a score name such as 'TMR', got {score!r}")
    score = score_registry.canonical(score)
    if isinstance(tables, Comparison):
        mc = tables
        if mc.matrices is None:
            raise ConfigError("the comparison has no matrices: compare(..., matrix=True) makes them")
        if score not in mc.matrices:
            raise ConfigError(f"score: the matrices have no {score!r}; they have {', '.join(mc.score_names)}")
    else:
        tables = as_tables(tables)
        if len(tables) < 3:
            raise ConfigError(f"a behaviour map needs at least three policies, got {len(tables)}")
        mc = compare(
            tables, None, scores=[score], score_options=score_options, matrix=True, progress=progress, executor=executor
        )
    assert mc.matrices is not None
    s = mc.matrices[score]
    ids = [str(i) for i in s.index]
    if len(ids) < 3:
        raise ConfigError(f"a behaviour map needs at least three policies, got {len(ids)}")
    sim = s.to_numpy(dtype=float)
    sym = (sim + sim.T) / 2
    np.fill_diagonal(sym, 1.0)  # a policy is at distance 0 from itself (its self-pair may be undefined)
    bad = np.argwhere(~np.isfinite(sym))
    if len(bad):
        i, j = bad[0]
        raise ConfigError(
            f"score {score} is undefined for the pair {ids[i]!r}, {ids[j]!r} (no context where both have a value, "
            "e.g. a text score of a policy without prompts); choose a score every pair has, such as TMR"
        )
    dist = np.clip(1.0 - sym, 0.0, None)
    coords, values = classical_mds(dist, dims)
    trials, checkpoints, finals = _trials(ids, mc.policies)
    axes = ["x", "y", *[f"dim{k + 1}" for k in range(2, dims)]][:dims]
    frame = pd.DataFrame(
        {"id": ids, "trial": trials, "checkpoint": checkpoints, "final": [p in finals for p in ids]}
        | {a: coords[:, k] for k, a in enumerate(axes)}
    )
    distances = pd.DataFrame(dist, index=pd.Index(ids, name="a"), columns=pd.Index(ids, name="b"))
    link = average_linkage(distances.loc[finals, finals].to_numpy()) if len(finals) >= 2 else None
    return BehaviourMap(
        score=score,
        coords=frame,
        distances=distances,
        eigenvalues=values,
        finals=finals,
        linkage=link,
        signature=mc.signatures[score],
        context_fingerprint=mc.context_fingerprint,
        n_contexts=mc.n_contexts,
        policies={p: dict(mc.policies[p]) for p in ids},
    )


def write_map(bm: BehaviourMap, out: str | os.PathLike, *, sources: Sequence[str] = ()) -> dict[str, Path]:
    """Write the map's tables and figures into the directory ``out`` (see the module doc);
    returns the written paths by name. Same map, byte-identical files."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    paths = {"map.csv": out / "map.csv", "distances.csv": out / "distances.csv", "meta": out / "map.meta.json"}
    bm.coords.to_csv(paths["map.csv"], index=False, float_format="%.10g")
    bm.distances.to_csv(paths["distances.csv"], float_format="%.10g")
    title = f"Behaviour map: classical MDS of 1 − {bm.score} ({len(bm.coords)} policies, {bm.n_contexts} contexts)"
    paths["map.png"], paths["map.svg"] = behaviour_map_plot(bm.coords, out / "map", title=title, explained=bm.explained)
    if bm.linkage is not None:
        z = bm.linkage
        pd.DataFrame(
            {
                "cluster": np.arange(len(bm.finals), len(bm.finals) + len(z)),
                "left": z[:, 0].astype(int),
                "right": z[:, 1].astype(int),
                "distance": z[:, 2],
                "size": z[:, 3].astype(int),
            }
        ).to_csv(out / "dendrogram.csv", index=False, float_format="%.10g")
        paths["dendrogram.csv"] = out / "dendrogram.csv"
        paths["dendrogram.png"], paths["dendrogram.svg"] = dendrogram_plot(
            z, bm.finals, out / "dendrogram", title=f"Final policies, average linkage on 1 − {bm.score}"
        )
    meta = {
        "score": bm.score,
        "signature": bm.signature,
        "distance": f"1 - ({bm.score}(a, b) + {bm.score}(b, a)) / 2, 0 on the diagonal",
        "context_fingerprint": bm.context_fingerprint,
        "n_contexts": bm.n_contexts,
        "eigenvalues": [float(f"{v:.10g}") for v in bm.eigenvalues],
        "explained": [float(f"{v:.6g}") for v in bm.explained],
        "finals": bm.finals,
        "dendrogram_leaves": "the finals, in this order (cluster ids 0..n-1); merges in dendrogram.csv",
        "policies": bm.policies,
        "tables": [str(s) for s in sources],
    }
    paths["meta"].write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n")
    return paths


# ------------------------------------------------------------------------------ command line
def _cmd_map(args: argparse.Namespace) -> int:

    if len(args.tables) < 3:
        raise ConfigError(f"a behaviour map needs at least three policies, got {len(args.tables)} table(s)")
    tables = [ResponseTable.load(p) for p in args.tables]
    bm = behaviour_map(tables, args.score, score_options=score_options(args), progress=args.progress)
    paths = write_map(bm, args.output, sources=args.tables)
    share = ", ".join(f"{v:.0%}" for v in bm.explained)
    n_trials = bm.coords["trial"].nunique()
    print(
        f"{len(bm.coords)} policies ({n_trials} trials or policies, {len(bm.finals)} final) on {bm.n_contexts} "
        f"contexts; MDS of 1 - {bm.score}, axes explain {share} -> {Path(args.output)}/"
    )
    print("  " + ", ".join(sorted(p.name for p in paths.values())))
    return 0


def register_map(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``map`` sub-command to ``subparsers``."""

    p = subparsers.add_parser(
        "map",
        help="behaviour map: classical MDS of 1 - score over every pair of policies, and a dendrogram",
        description="Place policies by how alike they behave: classical MDS of 1 - score (symmetrised) over every "
        "pair of response tables of one context set; each trial's checkpoints joined in training order; a "
        "dendrogram (average linkage) of the final policies. Writes map.csv, distances.csv, dendrogram.csv, "
        "map.meta.json and map/dendrogram .png/.svg into DIR.",
    )
    p.add_argument("tables", nargs="+", metavar="TABLE", help="response tables of one context set (at least three)")
    p.add_argument("-o", "--output", required=True, metavar="DIR", help="output directory")
    p.add_argument("--score", default="TMR", metavar="NAME", help="the score (default TMR)")
    p.add_argument(
        "--progress", action=argparse.BooleanOptionalAction, default=None, help="progress bars (default: for big jobs)"
    )
    add_model_options(p)
    p.set_defaults(func=_cmd_map)
    return p
