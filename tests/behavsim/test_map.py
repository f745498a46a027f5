"""The behaviour map (``behavsim._map``, ``behavsim map``): classical MDS and a dendrogram."""

import itertools

import numpy as np
import pytest

from behavsim import ConfigError, ResponseTable, compare
from behavsim._map import (  # private: MDS and linkage against scipy
    average_linkage,
    behaviour_map,
    classical_mds,
    write_map,
)
from behavsim.cli import main


def dists(points):
    p = np.asarray(points, float)
    return np.sqrt(((p[:, None, :] - p[None, :, :]) ** 2).sum(-1))


def test_mds_recovers_known_distances():
    pts = np.array([[0, 0], [3, 0], [3, 4], [0, 4], [1, 1]], float)
    coords, values = classical_mds(dists(pts))
    np.testing.assert_allclose(dists(coords), dists(pts), atol=1e-9)
    # up to rotation/reflection: the centred points are an orthogonal transform of the result
    c = pts - pts.mean(0)
    r, *_ = np.linalg.lstsq(coords, c, rcond=None)
    np.testing.assert_allclose(r @ r.T, np.eye(2), atol=1e-9)
    assert values[0] >= values[1] > 1e-9 and abs(values[2:]).max() < 1e-9  # planar: two axes


def test_mds_collinear_by_hand_and_sign():
    coords, _ = classical_mds(dists([[0.0], [1.0], [3.0]]))
    # centred positions -4/3, -1/3, 5/3; the largest |coordinate| is made positive; no second axis
    np.testing.assert_allclose(coords[:, 0], [-4 / 3, -1 / 3, 5 / 3], atol=1e-12)
    np.testing.assert_allclose(coords[:, 1], 0.0, atol=1e-7)
    flipped, _ = classical_mds(dists([[0.0], [-1.0], [-3.0]]))
    np.testing.assert_allclose(flipped[:, 0], coords[:, 0], atol=1e-12)


@pytest.mark.parametrize(
    "bad, message",
    [
        ([[0, 1], [2, 0]], "symmetric"),
        ([[1, 1], [1, 1]], "zero diagonal"),
        ([[0, np.nan], [np.nan, 0]], "NaN"),
        ([1, 2, 3], "square"),
    ],
)
def test_mds_bad_input(bad, message):
    with pytest.raises(ConfigError, match=message):
        classical_mds(bad)


def test_average_linkage_by_hand():
    # a, b at distance 1; c at 4 from a and 6 from b: a+b merge at 1, then c at (4 + 6) / 2 = 5
    z = average_linkage([[0, 1, 4], [1, 0, 6], [4, 6, 0]])
    np.testing.assert_allclose(z, [[0, 1, 1, 2], [2, 3, 5, 3]])


ACTS = {  # four contexts
    "hc": ["request(food)", "request(area)", "inform(name=x)", "bye()"],
    "ts-0-100": ["request(food)", "request(food)", "request(food)", "bye()"],
    "ts-0-200": ["request(food)", "request(area)", "request(food)", "bye()"],
    "ts-1-200": ["hello()", "request(area)", "inform(name=x)", "bye()"],
}


def tables():
    out = []
    for pid, acts in ACTS.items():
        meta = {"id": pid, "name": "hc" if pid == "hc" else "gp"}
        if pid.startswith("ts"):
            _, seed, ck = pid.split("-")
            meta.update(reward="ts", seed=int(seed), checkpoint=int(ck))
        out.append(ResponseTable(meta, "sha256:x:4", acts, [None] * 4))
    return out


def test_behaviour_map_by_hand(tmp_path):
    bm = behaviour_map(tables(), "tmr")
    assert bm.score == "TMR" and bm.n_contexts == 4
    ids = list(ACTS)
    for a, b in itertools.combinations(ids, 2):
        tmr = np.mean([x == y for x, y in zip(ACTS[a], ACTS[b])])
        assert bm.distances.loc[a, b] == bm.distances.loc[b, a] == pytest.approx(1 - tmr)
    got = dists(bm.coords[["x", "y"]].to_numpy())  # 4 points: exact in at most 3 dims, close in 2
    assert np.abs(got - bm.distances.to_numpy()).max() < 0.35
    assert bm.coords["trial"].tolist() == ["hc", "ts-seed0", "ts-seed0", "ts-seed1"]
    assert bm.coords["final"].tolist() == [True, False, True, True]
    assert bm.finals == ["hc", "ts-0-200", "ts-1-200"] and bm.linkage.shape == (2, 4)
    # the map of the same matrices, given as a Comparison with matrices, is the same
    again = behaviour_map(compare(tables(), None, scores=["TMR"], matrix=True), "TMR")
    assert again.coords.equals(bm.coords)
    p1 = write_map(bm, tmp_path / "a")
    write_map(again, tmp_path / "b")
    for name, path in p1.items():
        assert path.read_bytes() == (tmp_path / "b" / path.name).read_bytes(), name


def test_behaviour_map_refuses():
    with pytest.raises(ConfigError, match="at least three policies, got 2"):
        behaviour_map(tables()[:2])
    with pytest.raises(ConfigError, match="score BLEU4 is undefined for the pair 'hc', 'ts-0-100'"):
        behaviour_map(tables(), "BLEU4")


def test_cli(tmp_path, capsys):
    paths = []
    for t in tables():
        paths.append(str(tmp_path / f"{t.id}.jsonl"))
        t.save(paths[-1])
    assert main(["map", *paths, "-o", str(tmp_path / "m1")]) == 0
    out, _ = capsys.readouterr()
    assert "4 policies (3 trials or policies, 3 final) on 4 contexts; MDS of 1 - TMR" in out
    assert main(["map", *paths, "--score", "DMR", "-o", str(tmp_path / "m2")]) == 0
    assert main(["map", *paths, "--score", "DMR", "-o", str(tmp_path / "m3")]) == 0
    for name in ("map.csv", "distances.csv", "dendrogram.csv", "map.meta.json", "map.svg", "dendrogram.svg", "map.png"):
        assert (tmp_path / "m2" / name).read_bytes() == (tmp_path / "m3" / name).read_bytes(), name
    capsys.readouterr()
    assert main(["map", *paths[:2], "-o", str(tmp_path / "m4")]) == 2
    _, err = capsys.readouterr()
    assert err.strip() == "behavsim map: error: a behaviour map needs at least three policies, got 2 table(s)"
