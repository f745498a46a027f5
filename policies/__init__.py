"""Dialogue policies and the world they act in, one sub-package per policy family.

* :mod:`policies.simulation` — the simulated dialogue environment: domains (PyDial's
  CamRestaurants, an example domain), dialogue acts and summary actions, the agenda-based user,
  the focus belief tracker, the template generator, the environment, belief features, rewards
  and the interaction-quality estimators, with their data files.
* :mod:`policies.adapters` — what the families share (a policy on one domain, the ``domain=``
  option) and the kinds of no family: any callable, recorded answers.
* the families, each with its policy kinds: :mod:`policies.handcrafted` (the rule-based policy),
  :mod:`policies.gp` (GP-SARSA and its checkpoints), :mod:`policies.e2e` (behavsim's end-to-end
  model), :mod:`policies.llm` (language models: ``hf:``, ``openai:``), :mod:`policies.pydial`
  (policies trained by PyDial3).
* :mod:`policies.training` — the trainer behind ``behavsim train`` for the environment's learners,
  evaluation, dialogues played by any policy, and the follower behind ``behavsim monitor``.
* :mod:`policies.commands` — the command-line sub-commands this package adds to ``behavsim``:
  ``train``, ``respond`` and ``monitor``.

Layers (import-linter contracts in ``pyproject.toml``): commands over e2e | llm | pydial over
training over gp | handcrafted over adapters over simulation; ``policies`` builds on the core
(:mod:`behavsim`) only; ``contexts`` and ``experiments`` build on it.
"""
