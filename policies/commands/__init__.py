"""The ``behavsim`` sub-commands this package contributes (entry points ``behavsim.commands``).

* :mod:`.train` — ``behavsim train``: train policies (GP-SARSA trials, Table 1),
* :mod:`.respond` — ``behavsim respond``: answer a context set with any policies,
* :mod:`.monitor` — ``behavsim monitor``: follow a training run's checkpoints (behavsim's or
  PyDial's) and score each against the one before.
"""
