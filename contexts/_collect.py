"""Collected context sets (C_col): the belief states policies meet in seeded dialogues.

Each source policy — any policy behavsim can ask (:func:`behavsim.as_adapter`) — plays
``dialogues`` dialogues with the simulated user of :class:`policies.simulation.env.DialogueEnv`, greedily (a
GP policy's exploration is switched off for the run), and the belief state in front of the policy at every system turn is recorded — the
closing turn after the user's ``bye()`` included (the policy acts on the final belief there,
as in PyDial; ``meta["closing_turn"]`` marks it). So a dialogue of T turns gives T contexts.

With each belief, the dialogue up to the same moment is recorded as the context's ``history``
(``histories=True``, the default): the turns with their text and acts, the system's words from the
environment's generator, the user's from the user-side template generator with a random stream of
its own per dialogue (:class:`policies.simulation.history.DialogueText`) — so the beliefs, the
acts and everything computed from them are the same as without histories. A modular source
answers the belief, an end-to-end source (one that reads histories) the history.

Dialogue ``j`` is reset with the seed ``SeedSequence([seed, 3, j])`` — the derivation
:mod:`policies.training.train` uses for its evaluation dialogues, so every source meets the same user
goals and ``collect(ckpts, seed=policies.training.evaluation.EVAL_SEED)`` records exactly the evaluation
dialogues of a training run (the paper's C_col: 10 evaluation dialogues per trial).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from behavsim import BehavsimError, ConfigError, ContextSet, UnknownName, canonical_copy, did_you_mean
from behavsim.policy import Adapter, answer_context, as_adapter, error_text, reads_of
from contexts._common import domain_meta, jsonable, resolve_domain
from contexts.commands import add_output_option, check_options, option_domain, output_path, save_set
from policies.simulation.domain import add_domain_option
from policies.simulation.env import DialogueEnv
from policies.simulation.history import DialogueText
from policies.simulation.tracker import ErrorModel
from policies.simulation.user import DEFAULT_USER
from policies.training.evaluation import eval_dialogue_seed

__all__ = ["collect", "dialogue_seed", "ENV_OPTIONS", "register_collect"]

#: Keys of ``env_options`` (keyword arguments of :class:`policies.simulation.env.DialogueEnv`).
ENV_OPTIONS = ("max_turns", "error_model", "hello", "user_config", "nlg_seed", "final_system_turn")


def dialogue_seed(seed: int, j: int) -> int:
    """The environment seed of dialogue ``j`` (0-based) of a collection seeded with ``seed``.

    The training runner's evaluation seeding (:func:`policies.training.evaluation.eval_dialogue_seed`), so a
    collection with ``seed=EVAL_SEED`` replays the evaluation dialogues of every checkpoint.
    """
    return eval_dialogue_seed(int(j), int(seed))


def _user_meta(env_options: Mapping[str, Any] | None) -> Any:
    """The simulated user of a collection, as its metadata records it: a configuration's name
    (the default's when none was given) or its settings."""
    user = dict(env_options or {}).get("user_config")
    return DEFAULT_USER if user is None else jsonable(user)


def _source(spec: Any, domain: Any, where: str) -> Adapter:
    """The adapter of one source: a policy spec string (any registered kind), a path, an adapter,
    a policy object or a callable — built on the collection's ``domain``."""
    try:
        adapter = as_adapter(spec, domain=domain)
    except (UnknownName, ConfigError) as exc:
        raise ConfigError(f"{where}: {exc}") from None
    pdom = getattr(getattr(adapter, "policy", None), "domain", None)
    if pdom is not None and getattr(pdom, "name", None) != domain.name:
        raise ConfigError(
            f"{where}: policy {adapter.name!r} is for domain {getattr(pdom, 'name', pdom)!r}, "
            f"the environment's is {domain.name!r}"
        )
    return adapter


def _sources(policies: Any, domain: Any) -> list[tuple[str, Adapter, dict[str, Any]]]:
    if isinstance(policies, Mapping):
        items: list[tuple[str | None, Any, str]] = [(str(k), v, f"policies[{k!r}]") for k, v in policies.items()]
    else:
        if isinstance(policies, (str, os.PathLike)) or callable(policies) or not isinstance(policies, Sequence):
            policies = [policies]
        items = [(None, v, f"policies[{i}]") for i, v in enumerate(policies)]
    if not items:
        raise ConfigError("policies: expected at least one policy, got none")
    out = []
    seen: dict[str, int] = {}
    for label, spec, where in items:
        adapter = _source(spec, domain, where)
        if label is None:
            label = adapter.label
            if label in seen:  # two sources with one name: number them
                seen[label] += 1
                label = f"{label}#{seen[label]}"
            else:
                seen[label] = 1
        out.append((label, adapter, jsonable(dict(adapter.meta, label=label))))
    labels = [lab for lab, _, _ in out]
    if len(set(labels)) != len(labels):
        raise ConfigError(f"policies: duplicate labels {labels}")
    return out


def _make_env(domain: Any, env_options: Mapping[str, Any] | None):
    opts = dict(env_options or {})
    for k in opts:
        if k not in ENV_OPTIONS:
            raise ConfigError(
                f"env_options: unknown option {k!r}.{did_you_mean(k, ENV_OPTIONS)} "
                f"Valid options: {', '.join(ENV_OPTIONS)}"
            )
    if isinstance(opts.get("error_model"), Mapping):
        try:
            opts["error_model"] = ErrorModel(**opts["error_model"])
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"env_options: error_model: {exc}") from None
    try:
        return DialogueEnv(domain, **opts)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"env_options: {exc}") from None


def _step(env: Any, adapter: Adapter, label: str, belief: dict, where: str, history: list | None = None):
    """One system turn: the source answers the belief (or the history, if it reads histories);
    the environment takes its summary action when it has one the environment knows (PyDial's
    mapping to a master act), else its act; words alone only in the closing turn after the
    user's ``bye()``, where the agent says ``bye()`` whatever the system chose."""
    try:
        r = answer_context(adapter, canonical_copy(belief), history)
    except BehavsimError:
        raise
    except Exception as exc:
        raise ConfigError(f"policies: policy {label!r} failed {where}: {error_text(exc)}") from None
    if r.act is None and r.summary_action is None:
        if getattr(env, "closing", False):  # after the user's bye() the agent says bye() whatever was chosen
            return None, env.step_closing()
        raise ConfigError(
            f"policies: policy {label!r} answered {where} with text only (no act); the environment plays acts"
        )
    summary = r.summary_action if r.summary_action in env.actions else None
    try:
        out = env.step(summary) if summary is not None else env.step_act(r.act)
    except BehavsimError:
        raise
    except ValueError as exc:  # e.g. an act the environment cannot take
        raise ConfigError(f"policies: policy {label!r}: {exc}") from None
    return summary, out


def _progress(total: int, progress: bool | None):
    if progress is None:
        progress = total >= 100 and sys.stderr.isatty()
    if not progress:
        return None
    from tqdm.auto import tqdm  # start-up cost: ~0.9 s to import (measured under load); only a bar needs it

    return tqdm(total=total, desc="collecting", unit="dialogue", file=sys.stderr)


def _key(belief: dict) -> str:
    return json.dumps(belief, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def collect(
    policies: Any,
    *,
    dialogues: int = 10,
    seed: int = 0,
    domain: Any = None,
    env_options: Mapping[str, Any] | None = None,
    dedupe: bool = False,
    progress: bool | None = None,
    histories: bool = True,
) -> ContextSet:
    """The collected context set C_col (see the module doc).

    ``policies``: a list of sources — anything :func:`behavsim.respond` takes: policy spec strings
    of any registered kind (``handcrafted``, a checkpoint path, ``module:function``, ``pydial:CFG``),
    adapters, policy objects or callables ``belief -> act`` — or a mapping ``label -> source``; a
    single source is accepted too. Sources are labelled by their adapter's label (a checkpoint's
    ``gp-<reward>-seed<seed>-<dialogues>``, else the policy id) unless a mapping gives labels. A
    source's summary action drives the environment when it has one the environment knows (PyDial's
    mapping to a master act); otherwise its act is played as it is.

    Every context's ``meta``: ``origin="collected"``, ``source_policy`` (label), ``dialogue``
    (0-based index), ``dialogue_seed``, ``turn`` (1-based system turn, the environment's
    exchange number), ``seed``, ``summary_action`` (what the source chose), ``closing_turn``,
    and the dialogue's outcome ``dialogue_turns``, ``dialogue_success``. Duplicates are kept (a
    context set is a sample); ``dedupe=True`` drops exact duplicate beliefs, keeping the first.
    The same arguments give the same set (same fingerprint). ``progress``: a tqdm bar on
    stderr (default: for 100 dialogues or more on a terminal). ``histories``: record each
    context's dialogue history too (the default; ``False`` gives belief-only contexts, with the
    fingerprint such sets always had; a source that reads histories needs them).
    """
    if isinstance(dialogues, bool) or not isinstance(dialogues, (int, np.integer)) or dialogues < 1:
        raise ConfigError(f"dialogues: expected a positive integer, got {dialogues!r}")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ConfigError(f"seed: expected a non-negative integer, got {seed!r}")
    domain = resolve_domain(domain)
    sources = _sources(policies, domain)
    if not histories:
        for label, adapter, _ in sources:
            if "belief" not in reads_of(adapter):
                raise ConfigError(
                    f"policies: {label!r} reads dialogue histories; collect with histories (histories=True)"
                )
    env = _make_env(domain, env_options)
    text = _dialogue_text(env) if histories else None
    got = _Gathered(dedupe)
    bar = _progress(len(sources) * int(dialogues), progress)
    try:
        for label, adapter, _ in sources:
            with adapter.session():  # greedy: a learner's exploration is off for the run
                for j in range(int(dialogues)):
                    _play(env, text, adapter, label, j, int(seed), got)
                    if bar is not None:
                        bar.update(1)
    finally:
        if bar is not None:
            bar.close()
    meta = _set_meta(env, env_options, domain, int(seed), int(dialogues), sources, got)
    if text is not None:
        meta["histories"] = {"system_nlg": env.nlg.signature, "user_nlg": text.user_nlg.signature}
    return ContextSet(got.beliefs, got.metas, got.ids, meta, histories=got.turns if text is not None else None)


class _Gathered:
    """The contexts recorded so far; with ``dedupe``, a belief seen before is counted, not kept."""

    def __init__(self, dedupe: bool) -> None:
        self.dedupe = dedupe
        self.beliefs: list[dict] = []
        self.turns: list[list | None] = []
        self.metas: list[dict] = []
        self.ids: list[str] = []
        self.seen: set[str] = set()
        self.removed = 0

    def add(self, belief: dict, history: list | None, meta: dict, context_id: str) -> None:
        if self.dedupe:
            k = _key(belief)
            if k in self.seen:
                self.removed += 1
                return
            self.seen.add(k)
        self.beliefs.append(belief)
        self.turns.append(history)
        self.metas.append(meta)
        self.ids.append(context_id)


def _play(env: Any, text: Any, adapter: Adapter, label: str, j: int, seed: int, got: _Gathered) -> None:
    """Dialogue ``j`` of one source, every belief in front of it recorded (the dialogue's outcome
    added to each at the end)."""
    dseed = dialogue_seed(seed, j)
    belief, info = env.reset(seed=dseed)
    if text is not None:
        text.reset(dseed, info)
    first = len(got.metas)
    done = False
    while not done:
        record = canonical_copy(belief)
        history = text.turns if text is not None else None
        summary, step = _step(env, adapter, label, belief, f"in dialogue {j}", history)
        belief, _, terminated, truncated, info = step
        if text is not None:
            text.step(info)
        done = terminated or truncated
        turn = int(info["turns"])
        meta = {
            "origin": "collected",
            "source_policy": label,
            "dialogue": j,
            "dialogue_seed": dseed,
            "turn": turn,
            "seed": seed,
            "summary_action": summary,
            "closing_turn": bool(info.get("closing_turn")),
        }
        got.add(record, history, meta, f"{label}/d{j}/t{turn}")
    for m in got.metas[first:]:
        m["dialogue_turns"] = int(info["turns"])
        m["dialogue_success"] = bool(info["success"])


def _set_meta(
    env: Any,
    env_options: Mapping[str, Any] | None,
    domain: Any,
    seed: int,
    dialogues: int,
    sources: list[tuple[str, Adapter, dict[str, Any]]],
    got: _Gathered,
) -> dict[str, Any]:
    """The collected set's metadata (without its histories' generators)."""
    env_meta = jsonable(
        {k: getattr(env, k) for k in ("max_turns", "hello", "final_system_turn")}
        | {"error_model": env.error_model, "user_config": _user_meta(env_options)}
        | jsonable({k: v for k, v in dict(env_options or {}).items() if k != "user_config"})
    )
    return {
        "builder": "collected",
        "origin": "collected",
        **domain_meta(domain),
        "seed": seed,
        "dialogues": dialogues,
        "dialogue_seeds": "SeedSequence([seed, 3, j]) (as policies.training.train's evaluation dialogues)",
        "sources": [desc for _, _, desc in sources],
        "env_options": env_meta,
        "dedupe": bool(got.dedupe),
        "duplicates_removed": got.removed,
        "size": len(got.beliefs),
    }


def _dialogue_text(env: Any) -> Any:
    return DialogueText(env)


# ------------------------------------------------------------------------------ command
def register_collect(subparsers: Any) -> argparse.ArgumentParser:
    """``behavsim contexts collect``: C_col on the command line (entry point ``collect``)."""
    c = subparsers.add_parser(
        "collect",
        help="C_col: belief states met by policies in seeded dialogues",
        description="Collected contexts: each policy plays N seeded dialogues greedily with the "
        "simulated user; the belief at every system turn is recorded.",
    )
    c.add_argument(
        "--policy",
        action="extend",
        nargs="+",
        required=True,
        metavar="[LABEL=]SPEC",
        help="policy spec(s) as for 'behavsim respond' (handcrafted, a checkpoint .npz, module:function, "
        "pydial:CFG, ...); repeatable, and several may follow one --policy; LABEL= names the source",
    )
    c.add_argument("--dialogues", type=int, default=10, help="dialogues per policy (default 10)")
    c.add_argument("--seed", type=int, default=0, help="seed of the dialogues (default 0)")
    c.add_argument("--dedupe", action="store_true", help="drop exact duplicate beliefs (kept by default)")
    c.add_argument("--max-turns", type=int, default=25, help="dialogue length limit (default 25)")
    c.add_argument("--error-rate", type=float, default=0.0, help="semantic error rate (default 0, Environment 1)")
    c.add_argument("--nbest", type=int, default=1, help="N-best list size with --error-rate (default 1)")
    c.add_argument(
        "--user",
        metavar="NAME",
        help="simulated-user configuration: env1 (the default, Environment 1) or legacy (behavsim 0.1's user)",
    )
    c.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="progress bar (default: for 100 dialogues or more on a terminal)",
    )
    add_domain_option(c)
    add_output_option(c)
    c.set_defaults(func=_cmd_collect)
    return c


#: ``LABEL=SPEC`` in ``--policy``; a spec's own options (``kind:key=value``) have a colon before the ``=``.
_LABEL_RE = re.compile(r"^[A-Za-z0-9_.#-]+$")


def _labelled(items: list[str]) -> dict[str, str] | list[str]:
    """``--policy`` values: ``{label: spec}`` when every one has a ``LABEL=``, else the specs."""
    specs: dict[str, str] = {}
    plain: list[str] = []
    for item in items:
        label, sep, spec = item.partition("=")
        if sep and not os.path.exists(item) and _LABEL_RE.match(label) and spec.strip():
            if label in specs:
                raise ConfigError(f"--policy: label {label!r} given twice")
            specs[label.strip()] = spec.strip()
        else:
            plain.append(item)
    if specs and plain:
        raise ConfigError("--policy: give every policy a LABEL=... or none of them")
    return specs or plain


def _cmd_collect(args: argparse.Namespace) -> int:
    out = output_path(args.output)
    check_options(
        args, positive=("dialogues", "max_turns", "nbest"), non_negative=("seed",), probability=("error_rate",)
    )
    sources = _labelled(args.policy)
    env_options: dict[str, Any] = {"max_turns": args.max_turns}
    if args.user is not None:
        env_options["user_config"] = args.user
    if args.error_rate:
        env_options["error_model"] = {"error_rate": args.error_rate, "nbest": args.nbest}
    cs = collect(
        sources,
        dialogues=args.dialogues,
        seed=args.seed,
        domain=option_domain(args),
        env_options=env_options,
        dedupe=args.dedupe,
        progress=args.progress,
    )
    return save_set(cs, out)
