"""``pydial:CFG`` — a policy trained by PyDial3, asked from outside, one belief state at a time.

PyDial is imported only when this adapter is built. The calls relied on (PyDial3,
``helloric/pydial3``, read at commit fb16cd9ca310af86142edb4ef8d9fba471611f79):

* ``utils.Settings.init(config_file, seed)``; ``Settings.config`` (a ``ConfigParser``),
  ``Settings.set_seed(seed)``, ``Settings.random``;
* ``ontology.Ontology.init_global_ontology()``; ``Ontology.global_ontology.get_method(domain)``,
  ``.get_discourseAct(domain)``;
* ``policy.GPPolicy.GPPolicy(domain, False)`` (``policytype = gp``) or
  ``policy.HDCPolicy.HDCPolicy(domain)`` (``policytype = hdc``); on it ``restart()``,
  ``lastSystemAction``, ``nextAction(belief) -> master act string``, ``actToBeRecorded``
  (the summary action), and for GP ``get_State(belief).beliefStateVec`` and
  ``learner.params['_dictionary']`` (pairs of state, action);
* ``semo.SemOManager.SemOManager().generate(utils.DiaAct.DiaAct(act), domain)`` for prompts
  when the config sets ``[semo_<domain>] semotype = BasicSemO`` (template generator).

PyDial opens its data files by paths relative to its root, so loading and every call run inside
a ``chdir`` to the root, and imports its packages by their top-level names (``utils``, ``policy``,
...), also from inside its functions, so the root is first on ``sys.path`` for as long: ``sys.path``
is as it was afterwards (PyDial's modules stay in ``sys.modules``). Its state is module-global (``Settings.config``/``random``/``root``,
``Ontology.global_ontology``, and a count that lets ``FlatOntologyManager`` be built only once):
each adapter builds its own config and ontology with that count reset, restores the globals it
found after loading, and installs its own for each run (:meth:`PyDialAdapter.session`), so any
number of PyDial adapters live in one process, built one after another or asked in turn. An
exception from inside PyDial while loading becomes a one-line :class:`ConfigError` naming the
policy. Prompts are generated once per act string (they depend on the act alone). PyDial's own
log messages, emitted while it loads or answers, go to a log file, not the terminal
(:mod:`policies.pydial._log`: ``<behavsim cache>/logs/pydial.log``).

PyDial's logger (``utils.ContextLogger``) formats every message, kept or not, with the caller's
place, found by ``inspect.getouterframes`` — which reads the source of every frame of the stack.
That took more than half of an answer's time. While the adapter runs PyDial's code,
``ContextLogger._callLocString`` is replaced by :func:`_call_location`, which reads the same
place (file name, function, line) from the frame itself; the original is put back afterwards.
"""

from __future__ import annotations

import configparser
import contextlib
import importlib
import importlib.util
import os
import random as _pyrandom
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from behavsim import BehavsimError, ConfigError, ModelNotAvailable
from behavsim.policy import Adapter, PolicySpec, Response, file_sha256, source_info
from policies.pydial._log import toolkit_logging

__all__ = [
    "PyDialAdapter",
    "StateVectorMismatch",
    "find_pydial_root",
    "git_commit",
    "read_config",
    "resolve_config",
    "PYDIAL_HINT",
    "SUPPORTED_POLICY_TYPES",
]

SUPPORTED_POLICY_TYPES = ("gp", "hdc")
_SPECIAL_VALUES = frozenset({"dontcare", "**NONE**", "none"})
_NON_SLOTS = frozenset({"method", "discourseAct", "requested"})
_MODULES = (
    "utils/Settings.py",
    "utils/DiaAct.py",
    "ontology/Ontology.py",
    "policy/GPPolicy.py",
    "policy/HDCPolicy.py",
    "semo/SemOManager.py",
)
_PACKAGES = ("utils", "ontology", "policy", "semo")

PYDIAL_HINT = (
    "To make PyDial available: git clone https://github.com/helloric/pydial3 (the Python 3 port of "
    "PyDial), install its requirements, and either put its root folder on PYTHONPATH or pass "
    "--pydial-root DIR (Python: pydial_root=DIR, or the spec option pydial:CFG:root=DIR). "
    "behavsim runs PyDial from its root folder because PyDial opens its data files by relative path."
)


class StateVectorMismatch(BehavsimError, ValueError):
    """A belief gives a GP state vector of another length than the policy's dictionary points
    (PyDial's kernel would silently return 0)."""


def _missing_files(root: Path) -> list[str]:
    return [m for m in _MODULES if not (root / m).is_file()]


def find_pydial_root(root: str | os.PathLike | None = None) -> Path:
    """PyDial3's root folder: ``root`` if given, else where ``utils.Settings`` is importable
    from. Raises :class:`ModelNotAvailable` with instructions when there is none."""
    if root is not None:
        r = Path(root).expanduser().resolve()
        if not r.is_dir():
            raise ModelNotAvailable(f"PyDial root {str(root)!r} is not a folder. {PYDIAL_HINT}")
        missing = _missing_files(r)
        if missing:
            raise ModelNotAvailable(
                f"{str(r)!r} is not a PyDial3 root folder (missing {', '.join(missing)}). {PYDIAL_HINT}"
            )
        return r
    env = os.environ.get("PYDIAL_ROOT")
    if env:
        return find_pydial_root(env)
    for entry in sys.path:
        base = Path(entry or os.getcwd())
        try:
            if base.is_dir() and not _missing_files(base):
                return base.resolve()
        except OSError:
            continue
    raise ModelNotAvailable(
        f"PyDial is not available: no folder on sys.path holds PyDial3's {', '.join(_MODULES[:3])}, ... {PYDIAL_HINT}"
    )


def _check_imports(root: Path) -> None:
    """PyDial's top-level packages have generic names; refuse when another ``utils`` etc. is loaded."""
    for pkg in _PACKAGES:
        mod = sys.modules.get(pkg)
        if mod is None:
            continue
        locations = [Path(p).resolve() for p in (getattr(mod, "__path__", None) or [])]
        mod_file = getattr(mod, "__file__", None)
        if mod_file:
            locations.append(Path(mod_file).resolve().parent)
        if (root / pkg).resolve() not in locations:
            raise ModelNotAvailable(
                f"a module named {pkg!r} from {[str(p) for p in locations] or mod!r} is already "
                f"imported, so PyDial's {pkg!r} package in {root} cannot be; run behavsim in a "
                f"fresh process. {PYDIAL_HINT}"
            )


def git_commit(root: Path) -> str | None:
    """The commit of the PyDial checkout at ``root`` (read from ``.git``), or None."""
    head = root / ".git" / "HEAD"
    try:
        text = head.read_text().strip()
        if text.startswith("ref: "):
            ref = root / ".git" / text[5:]
            if ref.is_file():
                return ref.read_text().strip()
            packed = root / ".git" / "packed-refs"
            for line in packed.read_text().splitlines():
                if line.endswith(" " + text[5:]):
                    return line.split()[0]
            return None
        return text or None
    except OSError:
        return None


def _get(config: Any, sections: list[str], key: str, default: str | None = None) -> str | None:
    """The last of ``sections`` that sets ``key`` wins (PyDial: ``[policy_<domain>]`` over ``[policy]``)."""
    value = default
    for s in sections:
        if config.has_option(s, key):
            value = config.get(s, key)
    return value


def resolve_config(config: str | os.PathLike, root: Path) -> Path:
    """A PyDial config path: as given (working directory), else relative to the PyDial root."""
    cfg = Path(config).expanduser()
    if not cfg.is_file() and not cfg.is_absolute() and (root / cfg).is_file():
        cfg = root / cfg
    if not cfg.is_file():
        raise ConfigError(f"PyDial config {str(config)!r} not found (looked in the working directory and in {root})")
    return cfg.resolve()


def read_config(cfg: Path, what: str = "PyDial config") -> configparser.ConfigParser:
    """``cfg`` read without PyDial (its own parser's settings); a malformed file is one line."""
    parser = configparser.ConfigParser(allow_no_value=True)
    try:
        parser.read(cfg)
    except configparser.Error as exc:
        raise ConfigError(f"{what} {str(cfg)!r}: {str(exc).splitlines()[0]}") from None
    return parser


def _check_train_cfg(path: Path, infile: str) -> None:
    """Refuse ``<name>.train.cfg`` (written by ``pydial.py train`` for the batch that produced
    policy ``<name>``) whose ``inpolicyfile`` is another policy: the one training started from."""
    if not path.name.endswith(".train.cfg"):
        return
    produced = path.name[: -len(".train.cfg")]
    if infile and Path(infile).name != produced:
        raise ConfigError(
            f"{path}: PyDial wrote this config while training the batch that produced policy {produced!r}; its "
            f"inpolicyfile {infile!r} is the policy that batch started from, not {produced!r}. To load "
            f"{produced!r}, give the policy files (pydial:CFG:policyfile=<policydir>/{produced}, or "
            "PyDialAdapter(..., policy_file=...)), or use a config whose inpolicyfile names it"
        )


def _set(config: Any, section: str, key: str, value: str) -> None:
    if not config.has_section(section):
        config.add_section(section)
    config.set(section, key, value)


_GLOBALS = ("config", "random", "root")


def _call_location(self: Any) -> str:
    """``ContextLogger._callLocString``'s string (``file.py:function>line`` of the code that called
    the logger, three frames up), read from the frame instead of the source files."""
    frame = sys._getframe(0)
    for _ in range(3):
        if frame.f_back is None:
            break
        frame = frame.f_back
    return f"{frame.f_code.co_filename.split('/')[-1]}:{frame.f_code.co_name}>{frame.f_lineno}"


@contextlib.contextmanager
def _quick_log_location() -> Iterator[None]:
    """While the block runs, PyDial's logger finds its caller with :func:`_call_location`."""
    logger_mod = sys.modules.get("utils.ContextLogger")
    cls = getattr(logger_mod, "ContextLogger", None)
    original = getattr(cls, "_callLocString", None)
    if original is None or original is _call_location:
        yield
        return
    cls._callLocString = _call_location  # type: ignore[union-attr]
    try:
        yield
    finally:
        cls._callLocString = original  # type: ignore[union-attr]


def _save_globals(settings: Any, ontology: Any) -> tuple:
    """PyDial's module-global state (``utils.Settings``, ``Ontology.global_ontology``)."""
    return tuple(getattr(settings, g, None) for g in _GLOBALS) + (getattr(ontology, "global_ontology", None),)


def _restore_globals(settings: Any, ontology: Any, saved: tuple) -> None:
    for g, value in zip(_GLOBALS, saved):
        setattr(settings, g, value)
    ontology.global_ontology = saved[-1]


@contextlib.contextmanager
def _on_sys_path(root: Path) -> Iterator[None]:
    """PyDial's root first on ``sys.path`` while the block runs (PyDial imports its packages by their
    top-level names, also from inside its functions while it answers); ``sys.path`` as it was after."""
    entry = str(root)
    if entry in sys.path:
        yield
        return
    sys.path.insert(0, entry)
    try:
        yield
    finally:
        with contextlib.suppress(ValueError):
            sys.path.remove(entry)


def _import_pydial(root: Path) -> tuple[Any, Any, Any]:
    """PyDial's ``utils.Settings``, ``utils.DiaAct`` and ``ontology.Ontology`` modules (imported with the
    root on ``sys.path``; they stay in ``sys.modules``)."""
    try:
        return (
            importlib.import_module("utils.Settings"),
            importlib.import_module("utils.DiaAct"),
            importlib.import_module("ontology.Ontology"),
        )
    except ImportError as exc:
        raise ModelNotAvailable(
            f"PyDial found in {root} but it cannot be imported ({exc}); install its requirements. {PYDIAL_HINT}"
        ) from None


@contextlib.contextmanager
def _pydial_errors(policy: str, doing: str) -> Iterator[None]:
    """An exception from inside PyDial becomes a one-line, picklable :class:`ConfigError` naming the policy."""
    try:
        yield
    except BehavsimError:
        raise
    except Exception as exc:
        lines = str(exc).strip().splitlines()
        raise ConfigError(
            f"{policy}: PyDial failed while {doing}: {type(exc).__name__}" + (f": {lines[0]}" if lines else "")
        ) from None


class PyDialAdapter(Adapter):
    """A PyDial3 policy (GP-SARSA or handcrafted) loaded from its config file.

    ``config``: the PyDial config (``.cfg``); a relative path is looked up in the working
    directory, then under the PyDial root. ``root``: PyDial3's root folder (default: found on
    ``sys.path`` or ``$PYDIAL_ROOT``). ``domain``: default the first of ``[GENERAL] domains``.
    ``nlg``: realise prompts with PyDial's template generator when the config sets one.
    ``seed``: PyDial's random generator is re-seeded with it before every context (PyDial's
    ``inform`` picks one of the matching venues at random), so each answer depends on the
    context alone, not on the order of the contexts.
    ``policy_file``: the prefix of the GP policy's ``.dct``/``.prm`` files, replacing the config's
    ``inpolicyfile`` (relative to the root, as in PyDial) — e.g. one batch of a PyDial training.

    A config PyDial wrote while training, ``<configdir>/<name>-<batch>.train.cfg``, is refused
    without ``policy_file``: PyDial names it after the batch it *produced*, but its
    ``inpolicyfile`` is the batch that training started from (the previous one).
    """

    kind = "pydial"

    def __init__(
        self,
        config: str | os.PathLike,
        *,
        root: str | os.PathLike | None = None,
        domain: str | None = None,
        nlg: bool = True,
        seed: int = 0,
        policy_id: str | None = None,
        policy_file: str | os.PathLike | None = None,
    ):
        self.root = find_pydial_root(root)
        self.config_path = resolve_config(config, self.root)
        self.seed = int(seed)
        _check_imports(self.root)
        with (
            contextlib.chdir(self.root),
            _on_sys_path(self.root),
            toolkit_logging("pydial", f"pydial:{self.config_path}"),
        ):
            self._Settings, self._DiaAct, self._Ontology = _import_pydial(self.root)
            saved = _save_globals(self._Settings, self._Ontology)
            try:
                with _pydial_errors(f"pydial:{self.config_path}", "loading the policy"):
                    meta = self._load(domain, nlg, policy_id, policy_file)
            finally:
                _restore_globals(self._Settings, self._Ontology, saved)
        super().__init__(meta)
        self._active = False

    # ------------------------------------------------------------------ loading
    def _load(
        self, domain: str | None, nlg: bool, policy_id: str | None, policy_file: str | os.PathLike | None
    ) -> dict[str, Any]:
        """PyDial's config, ontology, policy and generator, set up in PyDial's globals (which the
        caller restores); returns the adapter's metadata."""
        S = self._Settings
        S.init(str(self.config_path), self.seed)
        conf = S.config
        self._settings_root = getattr(S, "root", "")
        if conf is None or not conf.sections():
            raise ConfigError(f"PyDial config {str(self.config_path)!r} is empty or unreadable")
        self.domain = domain = self._config_domain(conf, domain)
        sections = ["policy", f"policy_{domain}"]
        self.policy_type = (_get(conf, sections, "policytype", "hdc") or "hdc").strip()
        if self.policy_type not in SUPPORTED_POLICY_TYPES:
            raise ConfigError(
                f"{self.config_path}: policytype {self.policy_type!r} is not supported by the PyDial "
                f"adapter (supported: {', '.join(SUPPORTED_POLICY_TYPES)}); record its answers "
                "elsewhere and use recorded:FILE"
            )
        overrides = self._deterministic(conf, sections, domain, policy_file)
        # PyDial's ontology manager refuses a second instance in a process: each adapter owns one
        with contextlib.suppress(ImportError, AttributeError):
            importlib.import_module("ontology.FlatOntologyManager").FlatOntologyManager.instances = 0
        self._Ontology.init_global_ontology()
        self._ontology = self._Ontology.global_ontology
        self._config = conf
        meta: dict[str, Any] = {
            "id": policy_id or f"pydial-{self.config_path.stem}",
            "name": f"pydial-{self.policy_type}",
            "kind": "pydial",
            "policy": self.policy_type,
            "domain": domain,
            "rng_seed": self.seed,
            "overrides": overrides,
            "pydial_commit": git_commit(self.root),
            # everything specific to these files under "path" (see policies.adapters.source_info)
            "path": {"root": str(self.root), **source_info(self.config_path)},
        }
        self._expected_len: int | None = None
        if self.policy_type == "gp":
            meta["path"].update(self._load_gp(conf, sections, domain))
        else:
            self.policy = importlib.import_module("policy.HDCPolicy").HDCPolicy(domain)
        meta["nlg"] = self._load_nlg(conf, domain, nlg)
        self._method_order = list(self._ontology.get_method(domain))
        self._dact_order = list(self._ontology.get_discourseAct(domain))
        return meta

    def _config_domain(self, conf: Any, domain: str | None) -> str:
        """``domain``, or the first of the config's ``[GENERAL] domains``; one the config does not list is refused."""
        domains = [d.strip() for d in (_get(conf, ["GENERAL"], "domains") or "").split(",") if d.strip()]
        if domain is None:
            if not domains:
                raise ConfigError(
                    f"{self.config_path}: [GENERAL] domains is not set; give the domain "
                    "(pydial:CFG:domain=CamRestaurants)"
                )
            return domains[0]
        if domains and domain not in domains:
            raise ConfigError(f"{self.config_path}: domain {domain!r} is not among [GENERAL] domains {domains}")
        return domain

    def _deterministic(
        self, conf: Any, sections: list[str], domain: str, policy_file: str | os.PathLike | None
    ) -> dict[str, str]:
        """The config set for a deterministic evaluation — no learning, greedy GP (scale <= 0), no random
        policy — and ``policy_file`` in place of its ``inpolicyfile``; returns the overrides."""
        policy_keys = {"learning": "False"}
        if policy_file is not None:
            policy_keys["inpolicyfile"] = str(policy_file)
        else:
            _check_train_cfg(self.config_path, _get(conf, sections, "inpolicyfile", "") or "")
        for sec in sections:
            if conf.has_section(sec) or sec == "policy":
                for key, value in policy_keys.items():
                    _set(conf, sec, key, value)
        overrides = {f"policy.{key}": value for key, value in policy_keys.items()}
        for sec in ("gpsarsa", f"gpsarsa_{domain}"):
            if conf.has_section(sec) or sec == "gpsarsa":
                _set(conf, sec, "scale", "-1")
                _set(conf, sec, "random", "False")
        overrides.update({"gpsarsa.scale": "-1", "gpsarsa.random": "False"})
        return overrides

    def _load_gp(self, conf: Any, sections: list[str], domain: str) -> dict[str, Any]:
        """The trained GP policy (its files must exist and its dictionary hold points); returns what
        identifies its files."""
        infile = _get(conf, sections, "inpolicyfile", "") or ""
        if not infile:
            raise ConfigError(
                f"{self.config_path}: policytype gp needs [policy] inpolicyfile (the prefix of "
                "the trained .dct/.prm files)"
            )
        files = [Path(infile + ext) for ext in (".dct", ".prm")]
        missing = [str(f) for f in files if not f.is_file()]
        if missing:
            raise ConfigError(
                f"{self.config_path}: policy files not found (relative paths are taken from the "
                f"PyDial root {self.root}): {', '.join(missing)}; PyDial would silently run an "
                "untrained policy"
            )
        self.policy = importlib.import_module("policy.GPPolicy").GPPolicy(domain, False)
        dictionary = self.policy.learner.params.get("_dictionary") or []
        if not dictionary:
            raise ConfigError(f"{self.config_path}: the GP policy {infile!r} has an empty dictionary (untrained?)")
        vec = getattr(dictionary[0][0], "beliefStateVec", None)
        self._expected_len = None if vec is None else len(vec)
        return {
            "policy_file": infile,
            "policy_sha256": [file_sha256(f) for f in files],
            "dictionary_size": len(dictionary),
        }

    def _load_nlg(self, conf: Any, domain: str, nlg: bool) -> str | None:
        """PyDial's template generator when asked for and the config sets one; returns its ``meta["nlg"]``."""
        self._semo: Any = None
        self._prompts: dict[str, Any] = {}
        semotype = _get(conf, [f"semo_{domain}"], "semotype", "PassthroughSemO")
        if nlg and semotype and semotype != "PassthroughSemO":
            self._semo = importlib.import_module("semo.SemOManager").SemOManager()
            return f"{semotype}:{_get(conf, [f'semo_{domain}'], 'templatefile', '')}"
        return None  # PassthroughSemO would echo the act: no prompt instead

    # ------------------------------------------------------------------ checking
    def _ontology_values(self) -> dict[str, set[str]]:
        """PyDial's informable slots for the domain and their values (without ``dontcare``/``**NONE**``)."""
        with self.session():
            slots = self._ontology.get_informable_slots_and_values(self.domain)
        return {s: {str(v) for v in vals} - _SPECIAL_VALUES for s, vals in slots.items()}

    def check_contexts(self, contexts: Any) -> None:
        """Refuse a context set whose informable slots or values are not those of PyDial's ontology
        for the domain: PyDial would answer on a state vector that means something else."""
        beliefs = getattr(contexts, "beliefs", None)
        if not beliefs:
            return
        ours = self._ontology_values()
        theirs: dict[str, set[str]] = {}
        for belief in beliefs:
            for slot, dist in ((belief or {}).get("beliefs") or {}).items():
                if slot in _NON_SLOTS or not isinstance(dist, dict):
                    continue
                theirs.setdefault(slot, set()).update(str(v) for v in dist)
        theirs = {s: v - _SPECIAL_VALUES for s, v in theirs.items()}
        problems = []
        for slot in sorted(set(ours) | set(theirs)):
            if slot not in theirs:
                problems.append(f"slot {slot!r} missing from the beliefs")
            elif slot not in ours:
                problems.append(f"slot {slot!r} unknown to PyDial")
            elif ours[slot] != theirs[slot]:
                extra, missing = sorted(theirs[slot] - ours[slot]), sorted(ours[slot] - theirs[slot])
                parts = [f"{len(extra)} values PyDial lacks (e.g. {', '.join(map(repr, extra[:3]))})"] if extra else []
                if missing:
                    parts.append(f"{len(missing)} PyDial values missing (e.g. {', '.join(map(repr, missing[:3]))})")
                problems.append(f"slot {slot!r}: {'; '.join(parts)}")
        if problems:
            meta = getattr(contexts, "meta", None) or {}
            built = " ".join(
                str(x) for x in (meta.get("domain"), meta.get("domain_rules") and f"({meta['domain_rules']})") if x
            )
            raise ConfigError(
                f"contexts are built on domain {built or '(unnamed)'} ({'; '.join(problems[:4])}"
                f"{'; ...' if len(problems) > 4 else ''}) but pydial:{self.config_path} loads {self.domain} "
                f"(informable slots {', '.join(f'{k} ({len(v)} values)' for k, v in sorted(ours.items()))}); "
                f"build the contexts on PyDial's domain (behavsim contexts generate --domain camrestaurants)"
            )

    # ------------------------------------------------------------------ running
    @contextlib.contextmanager
    def session(self) -> Iterator[None]:
        if self._active:
            yield
            return
        S, Onto = self._Settings, self._Ontology
        saved = _save_globals(S, Onto)
        S.config, S.root, Onto.global_ontology = self._config, self._settings_root, self._ontology
        self._active = True
        try:
            with (
                contextlib.chdir(self.root),
                _on_sys_path(self.root),
                toolkit_logging("pydial", f"pydial:{self.config_path}"),
                _quick_log_location(),
            ):
                yield
        finally:
            self._active = False
            _restore_globals(S, Onto, saved)

    def _pydial_belief(self, belief: dict) -> dict:
        """PyDial reads ``method`` and ``discourseAct`` in dict order: put them in the ontology's."""
        b = dict(belief)
        beliefs = dict(b.get("beliefs") or {})
        for key, order in (("method", self._method_order), ("discourseAct", self._dact_order)):
            dist = beliefs.get(key)
            if isinstance(dist, dict) and order:
                beliefs[key] = {
                    **{k: dist.get(k, 0.0) for k in order},
                    **{k: v for k, v in dist.items() if k not in order},
                }
        b["beliefs"] = beliefs
        return b

    @staticmethod
    def _before_global_summary(belief: dict) -> dict:
        """``belief`` with ``method["none"]`` as PyDial's tracker leaves it.

        PyDial's ``SummaryUtils.globalSummary`` — called by the policy before it reads the belief
        (the masks, the GP state, the handcrafted rules) — overwrites ``method["none"]`` in place
        with 1 − Σ of every method entry, ``none`` included; behavsim's beliefs hold the value
        after that overwrite (what the policy reads, see :mod:`policies.simulation.tracker`). The overwrite is
        its own inverse, so PyDial is handed 1 − Σ(other methods) − ``none`` and reads the
        belief's own value: a belief recorded in a PyDial dialogue is answered as it was there."""
        method = (belief.get("beliefs") or {}).get("method")
        if not isinstance(method, dict) or "none" not in method:
            return belief
        rest = sum(float(v) for k, v in method.items() if k != "none")
        beliefs = {**belief["beliefs"], "method": {**method, "none": 1.0 - rest - float(method["none"])}}
        return {**belief, "beliefs": beliefs}

    def _prompt(self, act: str) -> str:
        """The template generator's prompt for ``act``, generated once per act string: it reads
        nothing but the act and Python's ``random`` (seeded with ``seed`` for each generation)."""
        if act not in self._prompts:
            state = _pyrandom.getstate()  # the template generator shuffles items with `random`
            _pyrandom.seed(self.seed)
            try:
                prompt = self._semo.generate(self._DiaAct.DiaAct(act), self.domain)
            finally:
                _pyrandom.setstate(state)
            self._prompts[act] = prompt
        return self._prompts[act]

    def respond_one(self, belief, *, context_id=None, context_meta=None) -> Response:
        with self.session():
            b = self._pydial_belief(belief)
            if self._expected_len is not None:
                n = len(self.policy.get_State(b).beliefStateVec)
                if n != self._expected_len:
                    raise StateVectorMismatch(
                        f"the belief gives a GP state vector of {n} numbers, the policy's dictionary points have "
                        f"{self._expected_len}: the belief does not fit PyDial's {self.domain} ontology (values of "
                        "the informable slots, method, discourseAct, requested slots, inform_info)"
                    )
            self._Settings.set_seed(self.seed)
            self.policy.restart()
            last = (context_meta or {}).get("last_system_act")
            self.policy.lastSystemAction = last
            act = self.policy.nextAction(self._before_global_summary(b))
            if not isinstance(act, str):
                act = str(act)
            summary = getattr(self.policy, "actToBeRecorded", None)
            summary = getattr(summary, "act", summary)
            prompt = None if self._semo is None else self._prompt(act)
            return Response(act=act, prompt=prompt, summary_action=summary if isinstance(summary, str) else None)


def pydial_kind(spec: PolicySpec, *, pydial_root: str | os.PathLike | None = None, **_: Any) -> Adapter:
    spec.check_options(("domain", "nlg", "seed", "root", "policyfile"))
    if not spec.target:
        raise ConfigError(f"policy spec {spec.text!r}: expected pydial:CONFIG.cfg")
    nlg = spec.options.get("nlg", "on").lower()
    if nlg not in ("on", "off", "true", "false", "1", "0", "yes", "no"):
        raise ConfigError(f"policy spec {spec.text!r}: option nlg must be on or off, got {nlg!r}")
    try:
        seed = int(spec.options.get("seed", "0"))
    except ValueError:
        raise ConfigError(f"policy spec {spec.text!r}: option seed must be an integer") from None
    return PyDialAdapter(
        spec.target,
        root=spec.options.get("root") or pydial_root,
        domain=spec.options.get("domain"),
        nlg=nlg in ("on", "true", "1", "yes"),
        seed=seed,
        policy_file=spec.options.get("policyfile"),
    )
