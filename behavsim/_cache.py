"""On-disk cache of text embeddings, keyed by the encoder's signature and the text.

One SQLite file (no pickle: arrays are stored as raw little-endian float32 bytes plus their
shape). The default location is ``$BEHAVSIM_CACHE_DIR`` or ``~/.cache/behavsim``; pass
``cache=False`` to an encoder to switch it off.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
from collections.abc import Iterable, Mapping
from pathlib import Path

import numpy as np

__all__ = ["EmbeddingCache", "default_cache_dir"]


def default_cache_dir() -> Path:
    env = os.environ.get("BEHAVSIM_CACHE_DIR")
    return Path(env) if env else Path.home() / ".cache" / "behavsim"


def _key(text: str) -> bytes:
    return hashlib.sha256(text.encode("utf-8")).digest()


class EmbeddingCache:
    """A persistent map ``(signature, text) -> float32 array``."""

    def __init__(self, path: str | os.PathLike | None = None):
        self.path = Path(path) if path is not None else default_cache_dir() / "embeddings.sqlite"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(str(self.path), timeout=60)
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS emb (sig TEXT NOT NULL, key BLOB NOT NULL, "
            "shape TEXT NOT NULL, data BLOB NOT NULL, PRIMARY KEY (sig, key))"
        )
        self._db.commit()

    def get_many(self, signature: str, texts: Iterable[str]) -> dict[str, np.ndarray]:
        texts = list(texts)
        out: dict[str, np.ndarray] = {}
        by_key = {_key(t): t for t in texts}
        keys = list(by_key)
        for start in range(0, len(keys), 500):
            chunk = keys[start : start + 500]
            marks = ",".join("?" * len(chunk))
            q = f"SELECT key, shape, data FROM emb WHERE sig = ? AND key IN ({marks})"
            for key, shape, data in self._db.execute(q, [signature, *chunk]):
                dims = tuple(int(x) for x in shape.split(",") if x)
                out[by_key[key]] = np.frombuffer(data, dtype="<f4").reshape(dims).copy()
        return out

    def put_many(self, signature: str, items: Mapping[str, np.ndarray]) -> None:
        rows = []
        for text, arr in items.items():
            a = np.ascontiguousarray(arr, dtype="<f4")
            rows.append((signature, _key(text), ",".join(map(str, a.shape)), a.tobytes()))
        self._db.executemany("INSERT OR REPLACE INTO emb VALUES (?, ?, ?, ?)", rows)
        self._db.commit()

    def close(self) -> None:
        self._db.close()
