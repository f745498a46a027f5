"""The shipped-domain registry and resolve_domain."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from policies.simulation.domain import (
    DATA_DIR,
    DEFAULT_DOMAIN,
    DOMAINS,
    Domain,
    DomainError,
    UnknownDomain,
    resolve_domain,
)

CAM = DATA_DIR / "camrestaurants"


def test_registry_lists_the_shipped_domains():
    assert DOMAINS.names() == ["camrestaurants", "example-restaurants"]
    assert DEFAULT_DOMAIN == "camrestaurants"


def test_default_domain_is_pydials_camrestaurants():
    d = resolve_domain(None)
    assert d is resolve_domain("camrestaurants") and not d.legacy_state
    example = resolve_domain("example-restaurants")
    assert example is Domain.builtin() and example.n_venues == 102 and example.legacy_state


def test_camrestaurants_is_pydials_data():
    d = resolve_domain("CamRestaurants")
    assert d is Domain.named("camrestaurants")
    assert d.n_venues == 110 and not d.legacy_state
    assert d.system_requestable == ("area", "food", "pricerange")
    assert list(d.informable) == ["food", "pricerange", "name", "area"]  # rules order kept
    assert (CAM / "NOTICE").read_text().count("Cambridge University Engineering Department") == 1


def test_camrestaurants_files_are_pydials_own(pydial_root):
    shared = pydial_root / "ontology" / "ontologies"
    for name in ("CamRestaurants-rules.json", "CamRestaurants-dbase.db"):
        assert (CAM / name).read_bytes() == (shared / name).read_bytes()


def test_resolve_a_rules_path_and_a_pair(tmp_path):
    for name in ("CamRestaurants-rules.json", "CamRestaurants-dbase.db"):
        shutil.copy(CAM / name, tmp_path / name)
    by_path = resolve_domain(tmp_path / "CamRestaurants-rules.json")
    by_str = resolve_domain(str(tmp_path / "CamRestaurants-rules.json"))
    pair = resolve_domain((tmp_path / "CamRestaurants-rules.json", tmp_path / "CamRestaurants-dbase.db"))
    assert by_path is by_str is pair and by_path.venues == resolve_domain("camrestaurants").venues
    d = Domain.builtin()
    assert resolve_domain(d) is d


def test_resolve_errors_name_the_fix(tmp_path):
    with pytest.raises(UnknownDomain, match="Did you mean 'camrestaurants'"):
        resolve_domain("camrestaurant")
    with pytest.raises(DomainError, match="rules file not found"):
        resolve_domain(tmp_path / "nope-rules.json")
    (tmp_path / "X-rules.json").write_text(json.dumps({}))
    with pytest.raises(DomainError, match="no database beside"):
        resolve_domain(tmp_path / "X-rules.json")
    with pytest.raises(DomainError, match="expected a domain name"):
        resolve_domain(3)


def test_package_data_lists_the_camrestaurants_folder():
    cfg = (Path(__file__).resolve().parents[3] / "setup.cfg").read_text()
    assert "policies.simulation = data/*, data/*/*" in cfg
