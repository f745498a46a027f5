"""The report's built-in sections (registered in ``setup.cfg`` under ``behavsim.report_sections``;
the framework and the list: :mod:`experiments.report`)."""
