"""The teacher of the small end-to-end training run the ``e2e_run`` fixture makes (tests/conftest.py).

It is deliberately simple — it always asks for the area — so that a model this small learns it
completely: every answer of the model is then a valid act, on any dialogue, and the policy-kind
tests can play and collect with it. (How well the model imitates the handcrafted policy is
measured by ``benchmarks/e2e.py``, at full size.) This module sits beside tests/conftest.py, on
``sys.path`` for every test, so the spec ``callable:_e2e_teacher:always_request_area`` resolves.
"""

from __future__ import annotations

from behavsim import Response


def always_request_area(belief):
    """The teacher of the small run."""
    return Response("request(area)", "what part of town do you have in mind?")


TEACHER = "callable:_e2e_teacher:always_request_area"
#: 8 teacher dialogues, 60 passes, one layer of width 32; a checkpoint every 240 dialogues trained on;
#: no chat mode (a model this small learns one mode completely, not two; the chat mode's test trains its own);
#: no DAgger rounds (the teacher's dialogues alone; the DAgger tests set their own); every target
#: alike (belief weight 1: with the default 3, this model of width 32 gets 14 of 15 acts right, not 15).
SMALL = dict(
    teacher=TEACHER,
    dialogues=8,
    epochs=60,
    checkpoint_every=240,
    batch_dialogues=4,
    n_layer=1,
    n_embd=32,
    n_head=2,
    lr=5e-3,
    warmup_steps=5,
    chat=False,
    dagger_dialogues=0,
    belief_weight=1.0,
)
