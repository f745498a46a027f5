"""behavsim's own end-to-end model: a small decoder-only transformer that reads a dialogue's text
and answers with a system act and a prompt, trained by imitation of any teacher policy.

* :class:`E2EConfig`, :func:`train_e2e` — training (``behavsim train --policy e2e --teacher SPEC``);
* :class:`E2EModel` — a checkpoint folder answering histories (the ``e2e:DIR`` policy kind);
* :func:`play` — dialogues in the environment driven by any policy's acts (task success).

The text format and what the model reads: :mod:`policies.learners.e2e._format`.
"""

from ._data import play_teacher, teacher_dialogue_seed
from ._model import MODEL_FILE, E2EModel
from ._train import RUN_FILE, E2EConfig, list_e2e_checkpoints, train_e2e

__all__ = [
    "E2EConfig",
    "train_e2e",
    "list_e2e_checkpoints",
    "E2EModel",
    "play_teacher",
    "teacher_dialogue_seed",
    "MODEL_FILE",
    "RUN_FILE",
]
