"""Command-line commands of ``policies`` (being grouped here; see the modules)."""
