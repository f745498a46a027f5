"""The study's built-in stages, one module each (registered in ``setup.cfg`` under
``behavsim.study_stages``; the list and their order: :mod:`experiments.study`)."""
