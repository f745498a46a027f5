"""A test-only policy that answers with text only, as an end-to-end model may: the handcrafted
policy's prompt with its act dropped (``Response(act=None, prompt=...)``), so on every context its
text equals the handcrafted policy's and it has no act to compare.

This module sits beside tests/experiments/test_study_text_only.py, on ``sys.path`` for the tests of
this folder (and for the study's respond workers, forked from the test process), so the spec
``callable:_text_only:handcrafted_text`` resolves.
"""

from __future__ import annotations

from behavsim import Response
from policies.handcrafted.policy import HandcraftedPolicy

_HANDCRAFTED = HandcraftedPolicy()  # the study's own handcrafted policy: default domain, nlg_seed=0


def handcrafted_text(belief):
    """The handcrafted policy's prompt for ``belief``, without its act."""
    return Response(act=None, prompt=_HANDCRAFTED.act(belief).prompt)


SPEC = "callable:_text_only:handcrafted_text"
ID = "_text_only.handcrafted_text"
