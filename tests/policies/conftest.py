"""Fixtures shared by the policy tests of several modules (one instance per session)."""

from _llm_fixtures import llm_contexts, llm_models, llm_server, own_server  # noqa: F401
