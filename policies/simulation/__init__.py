"""The simulated dialogue environment policies are trained and evaluated in.

* :mod:`.domain` — domains (ontology and database; PyDial's CamRestaurants is the default),
* :mod:`.actions` — PyDial's dialogue acts, summary actions and their masks,
* :mod:`.user` — the agenda-based simulated user (Environment 1's behaviour),
* :mod:`.tracker` — the focus belief tracker and the error model of the user's input,
* :mod:`.nlg` — the template generator of system prompts,
* :mod:`.env` — the environment (:class:`~.env.DialogueEnv`) that plays dialogues,
* :mod:`.features` — the summary belief vector GP-SARSA sees,
* :mod:`.rewards` — R_TS and R_IQ,
* :mod:`.iq` — interaction-quality estimators behind R_IQ,
* ``data/`` — the shipped domains and the IQ sample corpus.
"""
