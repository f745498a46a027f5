"""Scores as plugins: a score registered by another package's entry point (``behavsim.scores``) is
listed, computed by ``pair`` and ``compare`` (``--scores``, the matrices), and reported like a
built-in one, with no change to behavsim; a broken entry point is skipped with a warning."""

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _score_plugin import install_plugin, word_jaccard  # noqa: E402

from behavsim import ResponseTable, context_fingerprint  # noqa: E402

CONTEXTS = [{"beliefs": {"area": {"north": p, "**NONE**": 1 - p}}} for p in (0.0, 0.5, 1.0)]
PROMPTS = {
    "a": ["what kind of food would you like", "which part of town", "goodbye"],
    "b": ["what food would you like", "which part of town do you want", "goodbye and thanks"],
    "c": ["which area", "what kind of food", "goodbye"],
}


@pytest.fixture(scope="module")
def plugin(tmp_path_factory):
    return install_plugin(tmp_path_factory.mktemp("plugin"))


def run(env, *args):
    return subprocess.run([sys.executable, "-m", "behavsim.cli", *args], capture_output=True, text=True, env=env)


def test_it_is_listed_with_where_it_came_from(plugin):
    r = run(plugin, "scores")
    assert r.returncode == 0, r.stderr
    line = next(x for x in r.stdout.splitlines() if x.startswith("WordJaccard"))
    assert "text" in line and "asked" in line and "[from wordjaccard_demo:WordJaccard (wordjaccard-demo)]" in line
    assert "Broken" not in r.stdout and "could not be loaded" in r.stderr  # the broken one: a warning, no more
    # without the package nothing of it is there
    assert (
        "WordJaccard"
        not in subprocess.run([sys.executable, "-m", "behavsim.cli", "scores"], capture_output=True, text=True).stdout
    )


def test_pair_computes_it_by_name_case_insensitively(plugin):
    x, y = "what kind of food would you like", "what food would you like today"
    r = run(
        plugin, "pair", "request(food)", "request(food)", "--prompts", x, y, "--scores", "TMR", "wordjaccard", "--json"
    )
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["scores"] == {"TMR": 1.0, "WordJaccard": word_jaccard(x, y)} and word_jaccard(x, y) == 5 / 8
    assert out["signatures"]["WordJaccard"].startswith("WordJaccard|tok:whitespace|case:lower|demo:1|behavsim:")


def test_compare_writes_its_means_and_matrix(plugin, tmp_path):
    fp = context_fingerprint(CONTEXTS)
    paths = []
    for pid, prompts in PROMPTS.items():
        t = ResponseTable(policy={"id": pid}, context_fingerprint=fp, acts=["bye()"] * 3, prompts=prompts)
        paths.append(str(t.save(tmp_path / f"{pid}.jsonl")))
    r = run(
        plugin,
        "compare",
        *paths,
        "--scores",
        "TMR",
        "WordJaccard",
        "-o",
        str(tmp_path / "out.csv"),
        "--matrix",
        str(tmp_path / "m"),
    )
    assert r.returncode == 0, r.stderr
    means = pd.read_csv(tmp_path / "out.means.csv").set_index(["a", "b"])
    for a, b in [("a", "b"), ("a", "c"), ("b", "c")]:
        expected = sum(word_jaccard(x, y) for x, y in zip(PROMPTS[a], PROMPTS[b])) / 3
        assert means.loc[(a, b), "WordJaccard"] == pytest.approx(expected, abs=1e-9)  # written with 10 digits
    matrix = pd.read_csv(tmp_path / "m" / "WordJaccard.csv", index_col=0)
    assert matrix.loc["c", "b"] == pytest.approx(means.loc[("b", "c"), "WordJaccard"], abs=1e-9)  # row c, column b
    assert matrix.loc["b", "b"] == 1.0 and (tmp_path / "m" / "WordJaccard.png").is_file()
    meta = json.loads((tmp_path / "m" / "matrix.meta.json").read_text())
    assert meta["signatures"]["WordJaccard"].startswith("WordJaccard|")


def test_the_comparison_report_shows_it(plugin, tmp_path):
    code = (
        "import behavsim, behavsim.report as r, sys\n"
        f"fp = behavsim.context_fingerprint({CONTEXTS!r})\n"
        f"prompts = {PROMPTS!r}\n"
        "ts = [behavsim.ResponseTable(policy={'id': k}, context_fingerprint=fp, acts=['bye()'] * 3, prompts=v)"
        " for k, v in prompts.items()]\n"
        "c = behavsim.compare(ts, 'all', scores=['BLEU4', 'WordJaccard'])\n"
        "r.comparison_report(c, sys.argv[1])\n"
    )
    out = tmp_path / "report.html"
    r = subprocess.run([sys.executable, "-c", code, str(out)], capture_output=True, text=True, env=plugin)
    assert r.returncode == 0, r.stderr
    html = out.read_text()
    assert "word Jaccard" in html and "WordJaccard|tok:whitespace" in html  # its title and its signature


def test_a_plugin_is_never_a_default_score(plugin):
    r = run(plugin, "pair", "request(food)", "request(area)", "--prompts", "what food", "which area", "--json")
    assert r.returncode == 0, r.stderr
    assert list(json.loads(r.stdout)["scores"]) == [
        "TMR",
        "DMR",
        "CER",
        "CMR",
        "USE_cos",
        "USE_ang",
        "BLEU4",
        "BERTScore",
    ]


def test_an_entry_point_that_is_not_a_score_is_refused_in_one_line(tmp_path):
    env = install_plugin(tmp_path)
    ep = next((tmp_path / "site").glob("wordjaccard_demo-*.dist-info")) / "entry_points.txt"
    ep.write_text(ep.read_text() + "NotAScore = wordjaccard_demo:NotAScore\n")
    r = run(env, "pair", "bye()", "bye()", "--scores", "NotAScore")
    errors = [x for x in r.stderr.splitlines() if x.startswith("behavsim pair: error")]  # beside the warning on Broken
    assert r.returncode == 2 and len(errors) == 1
    assert "not a Score class" in errors[0] and "wordjaccard_demo:NotAScore" in errors[0]
