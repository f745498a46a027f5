"""Learners: policies that learn their behaviour (being grouped here; see the sub-packages)."""
