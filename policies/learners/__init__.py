"""Policies that learn or are written, and how they are trained.

* :mod:`.gp` — GP-SARSA (PyDial's algorithm, written anew) and its policy on a domain,
* :mod:`.handcrafted` — the rule-based policy,
* :mod:`.checkpoint` — checkpoint files (``.npz`` + JSON, no pickle),
* :mod:`.train` — the trainer behind ``behavsim train`` (trials, evaluation, resume).
"""
