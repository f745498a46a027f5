"""C_col from PyDial's own dialogues: the belief states a PyDial3 policy met in PyDial's simulation.

:func:`collect_pydial` runs ``dialogues`` dialogues of PyDial's simulated user, focus tracker and
the policy of a PyDial config, in a subprocess with PyDial's root as the working directory
(:data:`policies.pydial.RUN_DIALOGUES`, a script shipped with the PyDial family that only calls PyDial's
classes), and records the belief PyDial's policy was given at every system turn — PyDial's
opening turn before the user's first act and the closing turn after the user's ``bye()``
included (the policy acts on the final belief there, PyDial then says ``bye()``).

Each belief is PyDial's ``beliefs`` and ``features`` in behavsim's layout (the one
:mod:`policies.simulation.tracker` produces): ``method["none"]`` holds the value the policy reads — PyDial's
``SummaryUtils.globalSummary`` sets it to 1 − Σ of the method entries before the policy looks at
the belief — and ``features`` gain ``dbMatches`` (venues matching the accepted constraints,
:func:`policies.simulation.tracker.inform_info`). So behavsim's own policies on the same domain answer the
set, and the ``pydial:`` adapter given the same config answers every context with the act the
policy took in the dialogue.

Each context also carries its **history** (``histories=True``, the default): the dialogue's turns
before it — the system's acts said in words by PyDial's own template generator (SemO), the
simulated user's acts (an item without a slot, PyDial's ``inform(=dontcare)``, gets the slot
``this``, as behavsim's own user says it) said by behavsim's user-side template generator
(:class:`policies.simulation.user_nlg.UserTemplateNLG`, paraphrases drawn per dialogue from
``user_nlg_rng(SeedSequence([seed, j]))``). The words are made after the dialogues, so the beliefs
are the same with or without them.

Same config, root, seed and count → the same set (same fingerprint): PyDial draws every random
number from ``Settings.random``, seeded by ``Settings.init(config, seed)``; the subprocess runs
with ``PYTHONHASHSEED=0``. The policy runs as the ``pydial:`` adapter runs it (no learning, GP
greedy: ``scale = -1``) unless ``explore=True`` (the config's own settings, learning off).
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from behavsim import ConfigError, ContextSet, canonical_act, canonical_copy
from behavsim.policy import file_sha256
from contexts._common import domain_meta
from contexts.commands import add_output_option, check_options, output_path, save_set
from policies.pydial import RUN_DIALOGUES, find_pydial_root, git_commit, read_config, resolve_config
from policies.simulation.domain import DOMAINS, Domain, DomainError, resolve_domain
from policies.simulation.tracker import inform_info
from policies.simulation.user_nlg import UserTemplateNLG, user_nlg_rng

__all__ = ["collect_pydial", "behavsim_domain", "register_collect_pydial"]


def behavsim_domain(pydial_domain: str, root: Path):
    """behavsim's :class:`policies.simulation.domain.Domain` for a PyDial domain: the shipped one of that name
    (``CamRestaurants`` → ``camrestaurants``), else the rules and database in PyDial's root."""
    name = pydial_domain.lower()
    if name in DOMAINS:
        return resolve_domain(name)
    onto = root / "ontology" / "ontologies"
    try:
        return Domain.from_pydial(onto / f"{pydial_domain}-rules.json", onto / f"{pydial_domain}-dbase.db")
    except (DomainError, OSError) as exc:
        raise ConfigError(f"PyDial domain {pydial_domain!r}: {exc}") from None


def _config_domain(cfg: Path) -> str:
    domains = [d.strip() for d in read_config(cfg).get("GENERAL", "domains", fallback="").split(",") if d.strip()]
    if not domains:
        raise ConfigError(f"PyDial config {str(cfg)!r}: [GENERAL] domains is not set")
    return domains[0]


def behavsim_belief(pydial_belief: dict, domain: Any) -> dict:
    """A belief PyDial's policy was given, in behavsim's layout (see the module doc)."""
    b = {"beliefs": copy.deepcopy(pydial_belief["beliefs"]), "features": dict(pydial_belief.get("features") or {})}
    method = b["beliefs"].get("method")
    if isinstance(method, dict):
        method["none"] = 1.0 - sum(float(v) for v in method.values())  # as globalSummary leaves it
    if "dbMatches" not in b["features"]:
        b["features"]["dbMatches"] = inform_info(b, domain)[1]
    return canonical_copy(b)


def _run_helper(job: dict, root: Path, cfg: Path, timeout: float | None) -> dict:
    with tempfile.TemporaryDirectory(prefix="behavsim-pydial-") as tmp:
        out = Path(tmp) / "dialogues.json"
        env = {**os.environ, "PYTHONHASHSEED": "0", "MPLBACKEND": "Agg", "PYTHONPATH": str(root)}
        try:
            proc = subprocess.run(
                [sys.executable, str(RUN_DIALOGUES)],
                input=json.dumps({**job, "output": str(out)}),
                cwd=root,
                env=env,
                capture_output=True,
                text=True,
                timeout=timeout,
            )
        except subprocess.TimeoutExpired:
            raise ConfigError(f"pydial:{cfg}: PyDial's dialogues took longer than {timeout:g} s") from None
        try:
            result = json.loads(out.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            tail = (proc.stderr or "").strip().splitlines()
            raise ConfigError(
                f"pydial:{cfg}: PyDial's dialogue run failed (exit status {proc.returncode})"
                + (f": {tail[-1]}" if tail else "")
            ) from None
    if "error" in result:
        raise ConfigError(f"pydial:{cfg}: PyDial failed while running dialogues: {result['error']}")
    return result


def collect_pydial(
    config: str | os.PathLike,
    *,
    root: str | os.PathLike | None = None,
    dialogues: int = 10,
    seed: int = 0,
    domain: str | None = None,
    error_rate: float = 0.0,
    explore: bool = False,
    label: str | None = None,
    timeout: float | None = None,
    policy_file: str | os.PathLike | None = None,
    histories: bool = True,
) -> ContextSet:
    """The belief states PyDial's policy (``config``) met in ``dialogues`` of PyDial's own
    simulated dialogues seeded with ``seed`` (see the module doc).

    ``root``: PyDial3's root folder (default: ``$PYDIAL_ROOT`` or found on ``sys.path``); a
    relative ``config`` is looked up in the working directory, then under the root.
    ``domain``: PyDial's domain name (default: the config's first). ``error_rate``: PyDial's
    semantic error rate (0..1). ``policy_file``: the GP policy's ``.dct``/``.prm`` prefix (relative
    to the root), replacing the config's ``inpolicyfile`` — so a training config can be used.
    Per-context ``meta``: ``origin="collected"``, ``source_policy``,
    ``dialogue`` (0-based), ``turn`` (1-based system turn; turn 1 is PyDial's opening),
    ``seed``, ``act`` (the policy's master act, canonical), ``summary_action``,
    ``last_system_act``, ``closing_turn`` (the user has said bye: PyDial's
    ``discourseAct["bye"] > 0.8``), ``dialogue_turns``.
    """
    _check_counts(dialogues, seed, error_rate)
    r = find_pydial_root(root)
    cfg = resolve_config(config, r)
    pdomain = domain or _config_domain(cfg)
    bdomain = behavsim_domain(pdomain, r)
    job = {
        "config": str(cfg),
        "seed": int(seed),
        "dialogues": int(dialogues),
        "domain": pdomain,
        "error_rate": float(error_rate),
        "explore": bool(explore),
        "policy_file": None if policy_file is None else str(policy_file),
    }
    result = _run_helper(job, r, cfg, timeout)
    label = label or f"pydial-{cfg.stem}"
    spoken = _spoken(result.get("dialogues") or [], int(seed), bdomain) if histories else None
    beliefs, metas, ids, turns = _contexts(result["records"], bdomain, label, int(seed), spoken)
    source = {
        "label": label,
        "kind": "pydial",
        "policy": result.get("policy_type"),
        "pydial_domain": result.get("domain"),
        "config": str(cfg),
        "config_sha256": file_sha256(cfg),
        "root": str(r),
        "pydial_commit": git_commit(r),
        "explore": bool(explore),
        "error_rate": float(error_rate),
        "policy_file": None if policy_file is None else str(policy_file),
    }
    meta = {
        "builder": "collected-pydial",
        "origin": "collected",
        **domain_meta(bdomain),
        "seed": int(seed),
        "dialogues": int(dialogues),
        "sources": [source],
        "env": "PyDial's simulation (Simulate.SimulationSystem: its simulated user and focus tracker)",
        "size": len(beliefs),
    }
    if histories:
        meta["histories"] = {
            "system_nlg": result.get("system_nlg"),
            "user_nlg": f"{_user_nlg(bdomain).signature} (paraphrases: SeedSequence([seed, dialogue]))",
        }
    return ContextSet(beliefs, metas, ids, meta, histories=turns if histories else None)


def _check_counts(dialogues: Any, seed: Any, error_rate: Any) -> None:
    if isinstance(dialogues, bool) or not isinstance(dialogues, int) or dialogues < 1:
        raise ConfigError(f"dialogues: expected a positive integer, got {dialogues!r}")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ConfigError(f"seed: expected a non-negative integer, got {seed!r}")
    if not 0.0 <= float(error_rate) <= 1.0:
        raise ConfigError(f"error_rate: expected a number in [0, 1], got {error_rate!r}")


def _contexts(
    records: list[dict], domain: Any, label: str, seed: int, spoken: list[list[dict]] | None
) -> tuple[list[dict], list[dict], list[str], list]:
    """The beliefs, metas, ids and (with ``spoken``, the dialogues' turns with text) histories of
    the records the script in PyDial's root wrote, one per system turn."""
    beliefs, metas, ids = [], [], []
    turns: list = []
    lengths: dict[int, int] = {}
    for rec in records:
        lengths[rec["dialogue"]] = max(lengths.get(rec["dialogue"], 0), rec["turn"])
    for rec in records:
        b = behavsim_belief(rec["belief"], domain)
        bye = float(rec["belief"]["beliefs"].get("discourseAct", {}).get("bye", 0.0))
        j, t = int(rec["dialogue"]), int(rec["turn"])
        beliefs.append(b)
        if spoken is not None:
            turns.append(spoken[j][: int(rec["history"])])
        metas.append(
            {
                "origin": "collected",
                "source_policy": label,
                "dialogue": j,
                "turn": t,
                "seed": seed,
                "act": canonical_act(rec["act"]),
                "summary_action": rec.get("summary_action"),
                "last_system_act": None if rec.get("last_system_act") is None else str(rec["last_system_act"]),
                "closing_turn": bye > 0.8,
                "dialogue_turns": lengths[j],
            }
        )
        ids.append(f"{label}/d{j}/t{t}")
    return beliefs, metas, ids, turns


def _user_nlg(domain: Any):
    return UserTemplateNLG(domain.name)


def _spoken(dialogues: list, seed: int, domain: Any) -> list[list[dict]]:
    """Every dialogue's turns with text: the system's from PyDial, the user's from behavsim's
    user-side generator, one random stream per dialogue."""
    nlg = _user_nlg(domain)
    out = []
    for j, turns in enumerate(dialogues):
        rng = user_nlg_rng(int(np.random.SeedSequence([seed, j]).generate_state(1)[0]))
        spoken = []
        for t in turns:
            act = canonical_act(re.sub(r"([(,])\s*=", r"\1this=", t["act"]))  # PyDial's empty slot: behavsim's "this"
            text = t.get("text") if t["speaker"] == "system" else nlg.generate(act, rng)
            spoken.append({"speaker": t["speaker"], "text": str(text or ""), "act": act})
        out.append(spoken)
    return out


# ------------------------------------------------------------------------------ command
def register_collect_pydial(subparsers: Any) -> argparse.ArgumentParser:
    """``behavsim contexts collect-pydial`` (entry point ``collect-pydial``)."""
    cp = subparsers.add_parser(
        "collect-pydial",
        help="C_col from PyDial's own dialogues (its simulated user, tracker and a policy config)",
        description="Runs N dialogues of PyDial3's simulation (its simulated user and focus tracker) with the "
        "policy of a PyDial config, in a subprocess inside the PyDial root, and records the belief state the "
        "policy saw at every system turn, in behavsim's layout, with the act it took (meta 'act'). The policy "
        "runs as the pydial: adapter runs it (no learning, GP greedy) unless --explore. Same seed, same set.",
    )
    cp.add_argument("--config", required=True, metavar="CFG", help="PyDial config (as for pydial:CFG)")
    cp.add_argument(
        "--root",
        "--pydial-root",
        dest="root",
        metavar="DIR",
        default=None,
        help="PyDial3's root folder (default: $PYDIAL_ROOT or found on PYTHONPATH); PyDial runs there",
    )
    cp.add_argument("--dialogues", type=int, default=10, help="number of dialogues (default 10)")
    cp.add_argument("--seed", type=int, default=0, help="PyDial's seed (Settings.init(config, seed); default 0)")
    cp.add_argument(
        "--pydial-domain", metavar="DOMAIN", default=None, help="PyDial domain (default: the config's first)"
    )
    cp.add_argument("--error-rate", type=float, default=0.0, help="PyDial's semantic error rate, 0..1 (default 0)")
    cp.add_argument(
        "--explore",
        action="store_true",
        help="keep the config's exploration (GP scale, random) instead of greedy; learning stays off",
    )
    cp.add_argument(
        "--policy-file",
        metavar="PREFIX",
        default=None,
        help="GP policy .dct/.prm prefix replacing the config's inpolicyfile, relative to the root "
        "(e.g. _bspolicies/env1-gp-CR-seed1-00.4 with the training config env1-configs/env1-gp-CR.cfg)",
    )
    add_output_option(cp)
    cp.set_defaults(func=_cmd_collect_pydial)
    return cp


def _cmd_collect_pydial(args: argparse.Namespace) -> int:
    out = output_path(args.output)
    check_options(args, positive=("dialogues",), non_negative=("seed",), probability=("error_rate",))
    cs = collect_pydial(
        args.config,
        root=args.root,
        dialogues=args.dialogues,
        seed=args.seed,
        domain=args.pydial_domain,
        error_rate=args.error_rate,
        explore=args.explore,
        policy_file=args.policy_file,
    )
    return save_set(cs, out)
