"""A small end-to-end training run shared by the e2e and adapter tests (a few seconds on one core).

Its teacher is deliberately simple — it always asks for the area — so that a model this small
learns it completely: every answer of the model is then a valid act, on any dialogue, and the
policy-kind tests can play and collect with it. (How well the model imitates the handcrafted
policy is measured by ``benchmarks/e2e.py``, at full size.)
"""

from __future__ import annotations

import pytest

from behavsim import Response


def always_request_area(belief):
    """The teacher of the small run."""
    return Response("request(area)", "what part of town do you have in mind?")


TEACHER = "callable:_e2e_fixtures:always_request_area"
#: 8 teacher dialogues, 60 passes, one layer of width 32; a checkpoint every 240 dialogues trained on.
SMALL = dict(teacher=TEACHER, dialogues=8, epochs=60, checkpoint_every=240, batch_dialogues=4, n_layer=1, n_embd=32,
             n_head=2, lr=1e-2, warmup_steps=5)


@pytest.fixture(scope="session")
def e2e_run(tmp_path_factory):
    """``(config, folder, last checkpoint)`` of the small run."""
    from policies.learners.e2e import E2EConfig, train_e2e

    config = E2EConfig(**SMALL)
    out = tmp_path_factory.mktemp("e2e") / "run"
    ckpts = train_e2e(config, out)
    return config, out, ckpts[-1][1]
