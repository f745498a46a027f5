"""Training runs of the environment's learners (GP-SARSA, the handcrafted policy) and what reads them.

* :mod:`.train` — the trainer behind ``behavsim train`` (trials, evaluation, resume, workers),
* :mod:`.evaluation` — evaluation dialogues and Table 1,
* :mod:`.files` — a run folder's files (trials, ``ckpt-NNNNNN.npz``, ``metrics.csv``, its lock),
* :mod:`.progress` — what a run shows while it runs (progress bars or lines, TensorBoard scalars),
* :mod:`.play` — dialogues in the environment driven by any policy's acts,
* :mod:`.follow` — the follower behind ``behavsim monitor``: a run's checkpoints as they appear.
"""
