"""Fuzz: every file behavsim writes, damaged by random bit flips and truncations, is either refused
with behavsim's own error naming it, or read back exactly as written — never a traceback from
deep inside, never silently different content."""

import random

import numpy as np
import pytest

from behavsim import BehavsimError, ContextSet, ResponseTable
from behavsim.io import read_json_checked, write_json_checked
from contexts import generate_grid
from policies.gp.checkpoint import read_npz, save_checkpoint
from policies.gp.policy import GPSarsaPolicy
from policies.handcrafted.policy import HandcraftedPolicy

FLIPS = 300
CUTS = 60


def _damaged(data: bytes, rng: random.Random):
    """One-bit flips anywhere, then truncations anywhere (the file empty included)."""
    for _ in range(FLIPS):
        b = bytearray(data)
        pos = rng.randrange(len(b) * 8)
        b[pos // 8] ^= 1 << (pos % 8)
        yield "flip", bytes(b)
    for _ in range(CUTS):
        yield "cut", data[: rng.randrange(len(data))]


def _fuzz(path, read, same, seed=0):
    """(refused, unchanged) counts; fails on any other outcome."""
    original = path.read_bytes()
    want = read(path)
    refused = unchanged = 0
    for kind, data in _damaged(original, random.Random(seed)):
        path.write_bytes(data)
        try:
            got = read(path)
        except BehavsimError as exc:
            assert path.name in str(exc), str(exc)
            refused += 1
            continue
        assert same(got, want), f"{kind}: a damaged {path.name} was read with other content"
        unchanged += 1
    path.write_bytes(original)
    return refused, unchanged


def test_damaged_response_tables(tmp_path):
    cs = generate_grid(step=0.5)
    from behavsim.policy import respond

    table = respond(HandcraftedPolicy(), cs)
    for suffix in (".jsonl", ".parquet"):
        path = table.save(tmp_path / f"t{suffix}")
        refused, unchanged = _fuzz(
            path,
            ResponseTable.load,
            lambda a, b: (
                (a.acts, a.prompts, a.errors, a.context_ids, a.policy, a.context_fingerprint)
                == (b.acts, b.prompts, b.errors, b.context_ids, b.policy, b.context_fingerprint)
            ),
        )
        assert refused >= FLIPS // 2  # most damage is refused (the rest left the content as it was)


def test_damaged_context_sets(tmp_path):
    cs = generate_grid(step=0.5)
    for suffix in (".jsonl", ".parquet"):
        path = cs.save(tmp_path / f"c{suffix}")
        refused, _ = _fuzz(path, ContextSet.load, lambda a, b: a.fingerprint == b.fingerprint and a.ids == b.ids)
        assert refused >= FLIPS // 2


def test_damaged_state_files(tmp_path):
    path = write_json_checked(tmp_path / "state.json", {"compare": {"key": "ab12", "outputs": {"r.csv": "sha256:0"}}})
    refused, unchanged = _fuzz(path, read_json_checked, lambda a, b: a == b)
    assert refused == FLIPS + CUTS - unchanged and refused >= FLIPS


def test_damaged_checkpoints(tmp_path):
    policy = GPSarsaPolicy()
    path = save_checkpoint(tmp_path / "ckpt-000010.npz", policy)

    def same(a, b):
        (arr_a, meta_a), (arr_b, meta_b) = a, b
        return (
            meta_a == meta_b and arr_a.keys() == arr_b.keys() and all(np.array_equal(arr_a[k], arr_b[k]) for k in arr_a)
        )

    refused, unchanged = _fuzz(path, read_npz, same)
    assert refused >= FLIPS // 2


@pytest.mark.parametrize("text", ["", "{", "[]", '{"a": 1, "checksum": 5}', "\udc80".encode("utf-8", "surrogatepass")])
def test_odd_state_files(tmp_path, text):
    path = tmp_path / "state.json"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    with pytest.raises(BehavsimError, match="state.json"):
        read_json_checked(path)
