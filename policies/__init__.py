"""Dialogue policies and the world they act in, grouped by role.

* :mod:`policies.simulation` — the simulated dialogue environment: domains (PyDial's
  CamRestaurants, an example domain), dialogue acts and summary actions, the agenda-based user,
  the focus belief tracker, the template generator, the environment, belief features, rewards
  and the interaction-quality estimators, with their data files.
* :mod:`policies.learners` — the policies that learn or are written: GP-SARSA, the handcrafted
  policy, checkpoints, and the trainer behind ``behavsim train``.
* :mod:`policies.adapters` — the policy kinds contributed to behavsim's registry: built-in
  policies and checkpoints, any callable, recorded answers, policies trained by PyDial.
* :mod:`policies.commands` — the command-line sub-commands this package adds to ``behavsim``:
  ``train``, ``respond`` and ``monitor``.

Layers: ``policies`` builds on the core (:mod:`behavsim`) only; ``contexts`` and ``experiments``
build on it.
"""
