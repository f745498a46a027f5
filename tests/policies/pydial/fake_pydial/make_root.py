"""Builds a temporary stand-in "PyDial root" from this folder (tests only; see README.md)."""

import json
import shutil
import sys
from pathlib import Path

HERE = Path(__file__).parent
PACKAGES = ("utils", "ontology", "policy", "semo")
DOMAIN = "CamRestaurants"


def forget_pydial():
    """Drop the stand-in's modules from ``sys.modules`` (their names are generic)."""
    for name in list(sys.modules):
        if name.split(".")[0] in PACKAGES:
            del sys.modules[name]


def make_fake_root(dest):
    """A stand-in PyDial root at ``dest``: modules, PyDial's CamRestaurants ontology (as behavsim ships it),
    templates, configs ``config/gp.cfg`` (GP, BasicSemO) and ``config/hdc.cfg``, GP policy files."""
    from policies.simulation.domain import resolve_domain
    from policies.simulation.tracker import make_belief

    r = Path(dest)
    shutil.copytree(HERE, r, ignore=shutil.ignore_patterns("make_root.py", "README.md", "__pycache__"))
    for pkg in PACKAGES:
        (r / pkg / "__init__.py").write_text("")
    d = resolve_domain("camrestaurants")
    rules = json.loads(Path(d.source).read_text())
    (r / "ontology/ontologies").mkdir(parents=True)
    (r / f"ontology/ontologies/{DOMAIN}-rules.json").write_text(json.dumps(rules))
    (r / "semo/templates").mkdir(parents=True)
    (r / "semo/templates/fake.json").write_text(
        json.dumps({"request": "which $SLOTS would you like?", "inform": "there is a place with $SLOTS"})
    )
    unknown = make_belief(d)
    known = make_belief(
        d,
        {"area": {"centre": 1.0}, "pricerange": {"cheap": 1.0}, "food": {"italian": 1.0}},
        method={"byconstraints": 1.0},
    )
    no_food = make_belief(d, {"area": {"centre": 1.0}, "pricerange": {"cheap": 1.0}}, method={"byconstraints": 0.4})
    (r / "policies").mkdir()
    (r / "policies/gp-camrest.dct").write_text(
        json.dumps([[unknown, "request_area"], [known, "inform"], [no_food, "request_food"]])
    )
    (r / "policies/gp-camrest.prm").write_text(json.dumps([3.0, 3.0, 1.0]))
    (r / "config").mkdir()
    (r / "config/gp.cfg").write_text(
        f"[GENERAL]\ndomains = {DOMAIN}\n\n[policy]\npolicytype = gp\nlearning = True\n"
        "inpolicyfile = policies/gp-camrest\n\n[gpsarsa]\nscale = 3\n\n"
        f"[semo_{DOMAIN}]\nsemotype = BasicSemO\ntemplatefile = semo/templates/fake.json\n"
    )
    (r / "config/hdc.cfg").write_text(f"[GENERAL]\ndomains = {DOMAIN}\n\n[policy_{DOMAIN}]\npolicytype = hdc\n")
    return r
