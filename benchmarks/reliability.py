"""The README's reliability figures, printed in one run.

1. Damaged files: each file kind behavsim writes (response table and context set as JSONL and
   Parquet, a checked state file, a GP checkpoint) damaged by 300 random one-bit flips and 60
   truncations; every damaged file must be refused with behavsim's own error naming it, or read
   back with exactly the original content. Prints refused / unchanged / other (must be 0).
2. CER's edit distance on long acts: the bit-parallel distance against the textbook dynamic
   programme (the baseline, measured in the same run on the same item sequences).

Run: ``python benchmarks/reliability.py``.
"""

from __future__ import annotations

import random
import tempfile
import time
from pathlib import Path

import numpy as np

FLIPS, CUTS = 300, 60


def damaged(data: bytes, rng: random.Random):
    for _ in range(FLIPS):
        b = bytearray(data)
        pos = rng.randrange(len(b) * 8)
        b[pos // 8] ^= 1 << (pos % 8)
        yield bytes(b)
    for _ in range(CUTS):
        yield data[: rng.randrange(len(data))]


def fuzz(path: Path, read, same) -> tuple[int, int, int]:
    from behavsim import BehavsimError

    original = path.read_bytes()
    want = read(path)
    refused = unchanged = other = 0
    for data in damaged(original, random.Random(0)):
        path.write_bytes(data)
        try:
            got = read(path)
        except BehavsimError as exc:
            refused += path.name in str(exc)
            other += path.name not in str(exc)
            continue
        except Exception:  # a traceback a user would see
            other += 1
            continue
        unchanged += bool(same(got, want))
        other += not same(got, want)
    path.write_bytes(original)
    return refused, unchanged, other


def textbook(a, b) -> int:
    prev = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        cur = [i]
        for j, y in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (x != y)))
        prev = cur
    return prev[-1]


def main() -> None:
    from behavsim import ContextSet, ResponseTable
    from behavsim.io import read_json_checked, write_json_checked
    from behavsim.policy import respond
    from behavsim.scores._semantic import _levenshtein  # private: the edit distance CER uses, timed
    from contexts import generate_grid
    from policies.gp.checkpoint import read_npz, save_checkpoint
    from policies.gp.policy import GPSarsaPolicy
    from policies.handcrafted.policy import HandcraftedPolicy

    d = Path(tempfile.mkdtemp(prefix="behavsim-fuzz-"))
    cs = generate_grid(step=0.5)
    table = respond(HandcraftedPolicy(), cs)

    def same_table(a, b):
        return (a.acts, a.prompts, a.errors, a.context_ids, a.policy) == (
            b.acts,
            b.prompts,
            b.errors,
            b.context_ids,
            b.policy,
        )

    def same_npz(a, b):
        (x, m), (y, n) = a, b
        return m == n and x.keys() == y.keys() and all(np.array_equal(x[k], y[k]) for k in x)

    jobs = []
    for suffix in (".jsonl", ".parquet"):
        jobs.append((f"response table {suffix}", table.save(d / f"t{suffix}"), ResponseTable.load, same_table))
        jobs.append(
            (
                f"context set {suffix}",
                cs.save(d / f"c{suffix}"),
                ContextSet.load,
                lambda a, b: a.fingerprint == b.fingerprint and a.ids == b.ids,
            )
        )
    state = write_json_checked(d / "state.json", {"compare": {"key": "ab12", "outputs": {"r.csv": "sha256:0"}}})
    jobs.append(("state file", state, read_json_checked, lambda a, b: a == b))
    jobs.append(("GP checkpoint", save_checkpoint(d / "ckpt-000010.npz", GPSarsaPolicy()), read_npz, same_npz))
    print(f"1. damaged files ({FLIPS} one-bit flips + {CUTS} truncations each)")
    totals = np.zeros(3, dtype=int)
    for name, path, read, same in jobs:
        r = fuzz(path, read, same)
        totals += r
        print(f"   {name:<22} refused {r[0]:4d}   read back unchanged {r[1]:4d}   other {r[2]}")
    print(
        f"   all {totals.sum():,}: refused naming the file {totals[0]:,}, unchanged {totals[1]:,}, "
        f"other (traceback or changed content) {totals[2]}"
    )

    print("2. CER's edit distance on long acts (item sequences)")
    items = [f"s{i}" for i in range(4000)]
    for n in (1000, 4000):
        a, b = items[:n], items[:n][::-1]
        t0 = time.perf_counter()
        got = _levenshtein(a, b)
        fast = time.perf_counter() - t0
        if n <= 1000:
            t0 = time.perf_counter()
            assert textbook(a, b) == got
            slow = time.perf_counter() - t0
            print(
                f"   {n:,} items: bit-parallel {fast * 1e3:6.1f} ms, textbook DP {slow * 1e3:7.1f} ms "
                f"({slow / fast:,.0f}x)"
            )
        else:
            print(f"   {n:,} items: bit-parallel {fast * 1e3:6.1f} ms (the DP: ~16x the 1,000-item time)")


if __name__ == "__main__":
    main()
