import pytest

from experiments.study import load_config, run_study


@pytest.fixture(scope="session")
def tiny_run(tmp_path_factory):
    """One run of the tiny study, shared by the test modules that read it (copy it to change it;
    resuming it in place must leave it as it is)."""
    out = tmp_path_factory.mktemp("study") / "run"
    run_study(load_config("tiny"), out, log=lambda m: None)
    return out
