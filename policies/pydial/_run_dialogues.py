"""Runs dialogues in PyDial3's own simulation and records what its policy saw at every system turn.

A helper *script* for :func:`contexts.pydial.collect_pydial`: it is run in a subprocess of
its own with PyDial's root folder as the working directory (PyDial opens its data files by
relative path and keeps its state in module globals), never imported by behavsim. It only calls
PyDial's classes (PyDial3, ``helloric/pydial3``):

* ``utils.Settings.init(config, seed)`` — PyDial seeds its random generator ``Settings.random``
  (used by the simulated user and the policy) from the seed;
* ``utils.ContextLogger.createLoggingHandlers``, ``ontology.Ontology.init_global_ontology()``;
* ``Simulate.SimulationSystem(error_rate)`` and its ``run(session_id)`` per dialogue (PyDial's
  simulated user, focus tracker and the policy of the config, through ``Agent``); its
  ``agent_factory.agents[...].policy_manager.bootup(domain)`` builds the policy before the first
  dialogue so that its ``nextAction`` can be observed.

``SimulationSystem.run_dialogs`` is *not* used: it ends with ``power_down_factory``, which may
save the policy. The simulator's ``act_on`` is observed too: every system act it is given and every
user act it returns make the dialogue's turns. After the dialogues (so the simulation's random
numbers are untouched) each system act is said in words by PyDial's template generator
(``semo.RuleSemOMethods.BasicSemO`` with the domain's ``semo/templates/<Domain>Messages.txt``, or
the config's ``[semo_<Domain>] templatefile``), Python's ``random`` seeded with the run's seed for it
and restored afterwards (the generator shuffles items); a domain without templates gets the act
string as text. The config is forced to evaluation as the ``pydial:`` adapter forces it
(``learning = False``, GP ``scale = -1`` greedy, ``random = False``); with ``explore`` the
config's ``scale`` and ``random`` are kept (learning stays off).

Input (JSON on stdin): ``{"config": path, "seed": int, "dialogues": int, "domain": str|null,
"error_rate": float, "explore": bool, "policy_file": str|null (replaces inpolicyfile),
"output": path}``. Output (JSON written to ``output``):
``{"seed": int, "domain": str, "policy_type": str, "records": [{"dialogue", "turn", "belief",
"last_system_act", "act", "summary_action", "history"}, ...], "dialogues": [[{"speaker", "act",
"text"}, ...], ...], "system_nlg": str}`` where ``belief`` is a deep copy of the belief handed to
``policy.nextAction`` (``beliefs`` and ``features``) before the call, ``history`` the number of
the dialogue's turns before it, and ``dialogues`` every dialogue's turns (user turns without
text: PyDial's simulated user speaks in acts). Any failure:
``{"error": "one line"}`` in ``output`` and exit status 3.
"""

from __future__ import annotations

import contextlib
import copy
import io
import json
import os
import random
import sys
import traceback


def _set(config, section: str, key: str, value: str) -> None:
    if not config.has_section(section):
        config.add_section(section)
    config.set(section, key, value)


def _jsonable(obj):
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple, set)):
        return [_jsonable(v) for v in obj]
    if hasattr(obj, "item") and not isinstance(obj, (str, bytes)):  # numpy scalars
        return obj.item()
    if obj is None or isinstance(obj, (str, bool, int, float)):
        return obj
    return str(obj)


def run(job: dict) -> dict:
    sys.path.insert(0, os.getcwd())  # this script's own process, in PyDial's root
    os.environ.setdefault("MPLBACKEND", "Agg")
    from utils import ContextLogger, Settings  # PyDial's: importable once its root is on sys.path

    if not os.path.isfile(job["config"]):
        raise RuntimeError(f"PyDial config {job['config']!r} not found")
    seed = Settings.init(job["config"], int(job["seed"]))
    conf = Settings.config
    if conf is None or not conf.sections():
        raise RuntimeError(f"PyDial config {job['config']!r} is empty or unreadable")
    domain = _domain(job, conf)
    policy_type = _configure(job, conf, domain)
    ContextLogger.createLoggingHandlers(config=conf)
    from ontology import Ontology  # PyDial's

    Ontology.init_global_ontology()
    import Simulate  # PyDial's

    sim = Simulate.SimulationSystem(error_rate=float(job.get("error_rate", 0.0)))
    records, dialogues = _play(sim, domain, int(job["dialogues"]))
    nlg = _say_system_turns(conf, domain, dialogues, int(seed))
    return {
        "seed": int(seed),
        "domain": domain,
        "policy_type": policy_type,
        "records": records,
        "dialogues": dialogues,
        "system_nlg": nlg,
    }


def _domain(job: dict, conf) -> str:
    """The job's domain, or the config's only one."""
    domains = [d.strip() for d in (conf.get("GENERAL", "domains", fallback="") or "").split(",") if d.strip()]
    domain = job.get("domain") or (domains[0] if domains else None)
    if not domain:
        raise RuntimeError(f"{job['config']}: [GENERAL] domains is not set")
    if domains and domain not in domains:
        raise RuntimeError(f"{job['config']}: domain {domain!r} is not among [GENERAL] domains {domains}")
    if len(domains) > 1:
        raise RuntimeError(f"{job['config']}: several domains {domains}; collection supports one domain")
    return domain


def _configure(job: dict, conf, domain: str) -> str:
    """The config set for the run (no learning, greedy unless ``explore``, the job's policy files,
    quiet logging); returns the policy type."""
    sections = ["policy"] + ([f"policy_{domain}"] if conf.has_section(f"policy_{domain}") else [])
    policy_type = "hdc"
    for sec in sections:
        policy_type = conf.get(sec, "policytype", fallback=policy_type)
    for sec in sections:  # never learn, so never save a policy
        _set(conf, sec, "learning", "False")
        if job.get("policy_file"):
            _set(conf, sec, "inpolicyfile", str(job["policy_file"]))
    if not job.get("explore"):
        for sec in ["gpsarsa"] + ([f"gpsarsa_{domain}"] if conf.has_section(f"gpsarsa_{domain}") else []):
            _set(conf, sec, "scale", "-1")
            _set(conf, sec, "random", "False")
    if policy_type == "gp":
        infile = ""
        for sec in sections:
            infile = conf.get(sec, "inpolicyfile", fallback=infile)
        missing = [infile + ext for ext in (".dct", ".prm") if not os.path.isfile(infile + ext)]
        if not infile or missing:
            raise RuntimeError(
                f"{job['config']}: GP policy files not found (relative to the PyDial root): "
                f"{', '.join(missing) or '[policy] inpolicyfile is not set'}; PyDial would run an untrained policy"
                + (
                    " (a training config: give the policy files, --policy-file / policy_file=)"
                    if infile == "auto"
                    else ""
                )
            )
    # no log files, no colour; warnings and worse only
    _set(conf, "logging", "usecolor", "False")
    _set(conf, "logging", "screen_level", "error")
    if conf.has_option("logging", "file"):
        conf.remove_option("logging", "file")
    _set(conf, "GENERAL", "tracedialog", "0")
    return policy_type


def _play(sim, domain: str, n: int) -> tuple[list[dict], list[list[dict]]]:
    """``n`` dialogues of the simulation, its policy's ``nextAction`` and its user's ``act_on``
    observed: the records of what the policy saw and every dialogue's turns."""
    (agent,) = sim.agent_factory.agents.values()
    agent.policy_manager.bootup(domain)
    policy = agent.policy_manager.domainPolicies[domain]
    records: list[dict] = []
    where = {"dialogue": 0, "turn": 0}
    next_action = policy.nextAction
    dialogues: list[list[dict]] = []
    act_on = sim.simulator.act_on

    def observed_act_on(sys_act):
        out = act_on(sys_act)
        dialogues[-1].append({"speaker": "system", "act": str(sys_act)})
        dialogues[-1].append({"speaker": "user", "act": str(out[0])})
        return out

    sim.simulator.act_on = observed_act_on

    def observed(belief):
        before = {k: copy.deepcopy(belief.get(k)) for k in ("beliefs", "features")}
        last = policy.lastSystemAction
        act = next_action(belief)
        summary = getattr(policy, "actToBeRecorded", None)
        summary = getattr(summary, "act", summary)
        where["turn"] += 1
        records.append(
            {
                "dialogue": where["dialogue"],
                "turn": where["turn"],
                "belief": _jsonable(before),
                "last_system_act": None if last is None else str(last),
                "act": str(act),
                "summary_action": summary if isinstance(summary, str) else None,
                "history": len(dialogues[-1]),
            }
        )
        return act

    policy.nextAction = observed  # an instance attribute: Policy.act_on calls self.nextAction
    for j in range(n):
        where["dialogue"], where["turn"] = j, 0
        dialogues.append([])
        sim.run(session_id=f"behavsim-{j}")
    return records, dialogues


def _say_system_turns(conf, domain: str, dialogues: list, seed: int) -> str:
    """Each system turn's words by PyDial's template generator (see the module doc)."""
    section = f"semo_{domain}"
    if not conf.has_option(section, "templatefile"):
        default = os.path.join("semo", "templates", f"{domain}Messages.txt")
        if not os.path.isfile(default):
            for turns in dialogues:
                for t in turns:
                    if t["speaker"] == "system":
                        t["text"] = t["act"]
            return "none (act strings)"
        _set(conf, section, "templatefile", default)
    from semo.RuleSemOMethods import BasicSemO  # PyDial's

    semo = BasicSemO(domainTag=domain)
    state = random.getstate()
    random.seed(seed)
    try:
        for turns in dialogues:
            for t in turns:
                if t["speaker"] == "system":
                    t["text"] = str(semo.generate(t["act"]))
    finally:
        random.setstate(state)
    return f"pydial:BasicSemO({conf.get(section, 'templatefile')})"


def main() -> int:
    job = json.load(sys.stdin)
    try:
        with contextlib.redirect_stdout(io.StringIO()):  # PyDial prints to stdout
            out = run(job)
        status = 0
    except Exception as exc:  # one line for the caller; the traceback on stderr
        traceback.print_exc()
        lines = str(exc).strip().splitlines()
        first = lines[0] if lines else ""
        # RuntimeError: a check of this script (its message says it all); else PyDial's exception
        out = {
            "error": first if type(exc) is RuntimeError else f"{type(exc).__name__}" + (f": {first}" if first else "")
        }
        status = 3
    with open(job["output"], "w", encoding="utf-8") as f:
        json.dump(out, f)
    return status


if __name__ == "__main__":
    sys.exit(main())
