"""The simulated environment's parts (being grouped here; see the modules)."""
