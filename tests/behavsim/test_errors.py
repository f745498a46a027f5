"""behavsim's errors cross process boundaries: a task's error in a worker comes back to the caller
pickled, and must arrive as the same class with the same message (not as a pickling failure that
hides it)."""

import pickle

import pytest

from behavsim import ConfigError, UnknownScore, load_policy, parse_act
from behavsim.scores import scores as score_registry


def _raised(fn, *args, **kwargs):
    with pytest.raises(Exception) as info:
        fn(*args, **kwargs)
    return info.value


@pytest.mark.parametrize(
    "make",
    [
        lambda: _raised(parse_act, "inform(food"),
        lambda: _raised(score_registry.canonical, "TRM"),  # an unknown name, with the closest one
        lambda: UnknownScore("score", "TRM", ["TMR", "DMR"], "TMR"),
        lambda: ConfigError("workers must be positive"),
        lambda: _raised(load_policy, "handcrafted", domain="no-such-domain"),
    ],
)
def test_an_error_comes_back_from_pickling_as_it_was(make):
    err = make()
    back = pickle.loads(pickle.dumps(err))
    assert type(back) is type(err)
    assert str(back) == str(err) and str(err)
    for attr in ("name", "valid", "kind", "position", "problem"):
        assert getattr(back, attr, None) == getattr(err, attr, None)
