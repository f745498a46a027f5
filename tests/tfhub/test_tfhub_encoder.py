"""The ``tfhub`` sentence encoder for real: TensorFlow, tensorflow_hub and a SavedModel built here.

Runs in its own environment (``bash run.sh test-tfhub``: TensorFlow CPU and tensorflow-hub, no
PyTorch); in the main environment, which has no TensorFlow, the whole module is skipped.

The SavedModel is a tiny stand-in for the Universal Sentence Encoder with USE's calling
convention: ``hub.load(DIR)`` gives an object that maps a batch of strings to one L2-normalised
512-d float32 vector each (words and characters hashed into buckets of a fixed random table,
summed, normalised), plus a ``serving_default`` signature returning ``{"outputs": ...}``.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

tf = pytest.importorskip(
    "tensorflow", reason="TensorFlow is not installed here; the tfhub tests run with `bash run.sh test-tfhub`"
)
hub = pytest.importorskip(
    "tensorflow_hub", reason="tensorflow_hub is not installed here; the tfhub tests run with `bash run.sh test-tfhub`"
)

from behavsim._encoders import SentenceEncoder, TFHubEncoder, get_sentence_encoder  # noqa: E402  # private: the TF-Hub encoder itself
from behavsim.scores import USEAng, USECos  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
DIM = 512
BUCKETS = 2048

TEXTS = [
    "I would like a cheap restaurant in the centre.",
    "What kind of food would you like?",
    "what kind of food would you like",
    "Which area of town do you prefer?",
    "Thank you, goodbye.",
    "Café Jello serves Italian food — ¿quieres más?",
    "a",
]

PAIRS = [
    ("What kind of food would you like?", "Which area of town do you prefer?"),
    ("I would like a cheap restaurant in the centre.", "Café Jello serves Italian food — ¿quieres más?"),
    ("What kind of food would you like?", "what kind of food would you like"),
]


class _TinyUSE(tf.Module):
    def __init__(self):
        super().__init__()
        self.table = tf.Variable(tf.random.stateless_normal([BUCKETS, DIM], seed=[20, 24]), name="embeddings")

    def _embed(self, texts):
        words = tf.strings.split(tf.strings.lower(texts))
        chars = tf.strings.unicode_split(texts, "UTF-8")
        ids = tf.concat(
            [tf.strings.to_hash_bucket_fast(words, BUCKETS), tf.strings.to_hash_bucket_fast(chars, BUCKETS)], axis=1
        )
        summed = tf.reduce_sum(tf.gather(self.table, ids), axis=1)
        return tf.math.l2_normalize(summed, axis=1)

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
    def __call__(self, texts):
        return self._embed(texts)

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="inputs")])
    def serve(self, inputs):
        return {"outputs": self._embed(inputs)}


class _NotCallable(tf.Module):
    def __init__(self):
        super().__init__()
        self.v = tf.Variable(1.0)


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory) -> str:
    path = tmp_path_factory.mktemp("tiny-use") / "tiny-use-512"
    module = _TinyUSE()
    tf.saved_model.save(module, str(path), signatures={"serving_default": module.serve})
    return str(path)


@pytest.fixture(scope="module")
def direct(model_dir):
    """The SavedModel called directly (tf.saved_model, no tensorflow_hub, no behavsim), one batch."""
    loaded = tf.saved_model.load(model_dir)

    def embed(texts: list[str]) -> np.ndarray:
        out = loaded(tf.constant(texts)).numpy()
        serving = loaded.signatures["serving_default"](inputs=tf.constant(texts))["outputs"].numpy()
        np.testing.assert_array_equal(out, serving)
        return out

    return embed


class _DirectEncoder(SentenceEncoder):
    """The reference vectors (``direct``) behind behavsim's own USE score formulas."""

    name = "direct"

    def __init__(self, embed):
        super().__init__(cache=False)
        self._embed = embed

    @property
    def signature(self) -> str:
        return "direct-test"

    def _encode_one(self, text: str) -> np.ndarray:
        return self._embed([text])[0]


def test_savedmodel_is_use_like(model_dir, direct):
    model = hub.load(model_dir)
    out = np.asarray(model(TEXTS))
    assert out.shape == (len(TEXTS), DIM) and out.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1.0, atol=1e-6)
    assert len({row.tobytes() for row in out}) == len(TEXTS)
    np.testing.assert_allclose(out, direct(TEXTS), rtol=0, atol=1e-6)


def test_encoder_matches_savedmodel(model_dir, direct, tmp_path):
    want = direct(TEXTS)
    enc = TFHubEncoder(handle=model_dir, cache=False)
    got = enc.encode(TEXTS + TEXTS[:2])
    assert got.shape == (len(TEXTS) + 2, DIM) and got.dtype == np.float32
    np.testing.assert_allclose(got[: len(TEXTS)], want, rtol=0, atol=1e-6)
    np.testing.assert_array_equal(got[len(TEXTS) :], got[:2])
    assert re.match(r"tfhub:tiny-use-512@[0-9a-f]{16}\|tensorflow-hub-", enc.signature)

    # Through the registry and the on-disk cache: a second encoder reads what the first wrote.
    cache = tmp_path / "cache"
    first = get_sentence_encoder("tfhub", handle=model_dir, cache=cache).encode(TEXTS)
    second = TFHubEncoder(handle=model_dir, cache=cache)
    second._load = None  # type: ignore[assignment]  # must not load the model: every text is cached
    np.testing.assert_array_equal(second.encode(TEXTS), first)
    np.testing.assert_allclose(first, want, rtol=0, atol=1e-6)


def _behavsim(*args: str, cache: Path | None) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([*filter(None, env.get("PYTHONPATH", "").split(os.pathsep)), str(REPO)])
    if cache is not None:
        env["BEHAVSIM_CACHE_DIR"] = str(cache)
    script = Path(sys.executable).parent / "behavsim"
    cmd = [str(script)] if script.exists() else [sys.executable, "-m", "behavsim.cli"]
    return subprocess.run(cmd + list(args), env=env, capture_output=True, text=True, timeout=600)


def _pair(model_dir: str, pa: str, pb: str, *extra: str, cache: Path | None) -> dict:
    proc = _behavsim(
        "pair",
        "request(food)",
        "request(area)",
        "--prompts",
        pa,
        pb,
        "--scores",
        "USE_cos",
        "USE_ang",
        "--use-encoder",
        "tfhub",
        "--use-model",
        model_dir,
        "--json",
        *extra,
        cache=cache,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_cli_pair_matches_savedmodel(model_dir, direct, tmp_path):
    reference_cos = USECos(encoder=_DirectEncoder(direct))
    reference_ang = USEAng(encoder=_DirectEncoder(direct))
    cache = tmp_path / "cache"
    runs = [
        (PAIRS[0], ()),
        (PAIRS[0], ()),  # the same pair again: from the on-disk cache the first run filled
        (PAIRS[1], ("--no-cache",)),
        (PAIRS[2], ()),
    ]
    seen = []
    for (pa, pb), extra in runs:
        out = _pair(model_dir, pa, pb, *extra, cache=cache)
        va, vb = direct([pa, pb]).astype(np.float64)
        cos = float(np.clip(va @ vb / (np.linalg.norm(va) * np.linalg.norm(vb)), -1.0, 1.0))
        assert out["scores"]["USE_cos"] == pytest.approx(cos, abs=1e-6)
        assert out["scores"]["USE_cos"] == pytest.approx(reference_cos.score(pa, pb), abs=1e-6)
        assert out["scores"]["USE_ang"] == pytest.approx(reference_ang.score(pa, pb), abs=1e-6)
        assert -1.0 < cos < 1.0 and 0.0 < out["scores"]["USE_ang"] < 1.0
        for name in ("USE_cos", "USE_ang"):
            assert re.search(r"model:tfhub:tiny-use-512@[0-9a-f]{16}\|tensorflow-hub-", out["signatures"][name])
        seen.append(out["scores"])
    assert seen[1] == seen[0]
    assert (cache / "embeddings.sqlite").is_file()


def _bad_dirs(tmp: Path) -> dict[str, Path]:
    empty = tmp / "empty"
    empty.mkdir()
    corrupt = tmp / "corrupt"
    corrupt.mkdir()
    (corrupt / "saved_model.pb").write_bytes(b"not a SavedModel")
    not_callable = tmp / "not-callable"
    tf.saved_model.save(_NotCallable(), str(not_callable))
    return {"missing": tmp / "no-such-model", "empty": empty, "corrupt": corrupt, "not-callable": not_callable}


def test_cli_bad_model_dir_is_one_line_error(tmp_path):
    for kind, path in _bad_dirs(tmp_path).items():
        proc = _behavsim(
            "pair",
            "request(food)",
            "request(area)",
            "--prompts",
            "hello",
            "goodbye",
            "--scores",
            "USE_cos",
            "--use-encoder",
            "tfhub",
            "--use-model",
            str(path),
            cache=tmp_path / "cache",
        )
        assert proc.returncode == 2, (kind, proc.stderr)
        assert proc.stdout == "", kind
        assert "Traceback" not in proc.stderr, (kind, proc.stderr)
        errors = [line for line in proc.stderr.splitlines() if line.startswith("behavsim pair: error:")]
        assert len(errors) == 1 and proc.stderr.rstrip("\n").endswith(errors[0]), (kind, proc.stderr)
        assert str(path) in errors[0] and "SavedModel" in errors[0], (kind, errors[0])
