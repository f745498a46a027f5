"""``e2e:DIR`` — behavsim's end-to-end model (a checkpoint folder of ``behavsim train --policy e2e``).

The model reads a context's dialogue history (its text only) and answers with an act and a prompt
(:class:`policies.e2e.E2EModel`); a context set without histories is refused before the
first context. Answers are greedy (a model trained on people searches its words with 4 beams);
:meth:`E2EAdapter.respond_batch` answers the histories of a
block of contexts in batches (``batch=N``, default 32; ``threads=T``, default 1), as
:meth:`E2EAdapter.prepare` does for a whole set before :meth:`respond_one` reads the result one
context at a time (the reference path: the same answers, batching changes none).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from behavsim import ConfigError, Response, canonical_copy
from behavsim.policy import Adapter, PolicySpec, source_info
from policies.e2e._corpus import WIZARD_ID
from policies.e2e._model import E2EModel

__all__ = ["E2EAdapter", "e2e_kind", "greedy_by_an_earlier_default"]


class E2EAdapter(Adapter):
    """An :class:`~policies.e2e.E2EModel` as a policy kind (see the module doc)."""

    kind = "e2e"
    reads = ("history",)

    def __init__(self, model: Any, meta: dict[str, Any], *, label: str | None = None) -> None:
        super().__init__(meta, label=label)
        self.model = model

    def prepare(self, contexts: Any) -> None:
        histories = [h for h in (contexts.history(i) for i in range(len(contexts))) if h is not None]
        self.model.answer(histories)

    def respond_one(self, belief, *, context_id=None, context_meta=None, history=None) -> Response:
        out = self.model.answer([history])[0]
        if isinstance(out, Exception):
            raise out
        return out

    def respond_batch(self, contexts: Any, indices: Sequence[int]) -> list[Response | Exception]:
        """The histories of contexts ``indices`` at once (the model answers in batches of ``batch``,
        which change no answer; every answer is kept by the model, so a context set's repeated
        histories are answered once)."""
        return self.model.answer([canonical_copy(contexts.history(i)) for i in indices])

    def answer_histories(self, histories: Sequence[Any]) -> list[Response | Exception]:
        """Many histories at once (the environment's batched play uses it)."""
        return self.model.answer(list(histories))


def e2e_kind(spec: PolicySpec, **_: Any) -> Adapter:
    """``e2e:DIR[:batch=N][:threads=T][:beam=K]``: a checkpoint folder of behavsim's end-to-end
    model; ``beam``: beams searching its words (default: 4 for a model trained on people, else 1:
    greedy). Another width than the model's default is another policy (``-beamK`` after its id)."""
    spec.check_options(("batch", "threads", "beam"))
    if not spec.target:
        raise ConfigError(
            f"policy spec {spec.text!r}: expected e2e:DIR (a checkpoint folder of `behavsim train --policy e2e`)"
        )
    path = Path(spec.target)
    if not path.is_dir():
        raise ConfigError(f"policy spec {spec.text!r}: folder {str(path)!r} not found")
    batch = spec.int_option("batch", 32) or 32
    beam = spec.int_option("beam", None)
    if beam == 0:
        raise ConfigError(f"policy spec {spec.text!r}: beam must be a positive integer (1: greedy), got 0")
    model = E2EModel(path, batch_size=batch, threads=spec.int_option("threads", 1) or None, beam=beam)
    info = model.info
    teacher = info.get("teacher") or {}
    dialogues = int(info.get("dialogues", 0))
    trial = f"e2e-{teacher.get('id', 'teacher')}-seed{info.get('seed')}"
    meta: dict[str, Any] = {
        "id": f"{trial}-{dialogues:06d}",
        "name": "e2e",
        "kind": "e2e",
        "policy": "e2e",
        "teacher": teacher.get("id"),
        "seed": info.get("seed"),
        "checkpoint": dialogues,
        "domain": info.get("domain"),
        "path": source_info(path / "model.safetensors", folder=str(path)),
    }
    if model.beam != model.default_beam:  # another decoding than the model's own: another policy
        meta["id"] += f"-beam{model.beam}"
    if model.beam > 1:
        meta["beam"] = model.beam
    return E2EAdapter(model, meta, label=meta["id"])


def greedy_by_an_earlier_default(spec: str, policy: Mapping[str, Any]) -> bool:
    """Whether a response table of ``spec`` whose policy metadata is ``policy`` holds the greedy
    words of a model trained on people, answered before such a model searched its words with 4
    beams by default: the spec asks no width and the table records none (a study resuming a run
    folder of that version answers it again)."""
    return (
        spec.startswith("e2e:")
        and "beam=" not in spec
        and policy.get("kind") == "e2e"
        and policy.get("teacher") == WIZARD_ID
        and "beam" not in policy
    )
