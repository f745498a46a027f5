"""Fixtures of the core's tests: the paper's Appendix A (Ultes & Maier), five act/prompt pairs and
their published scores."""

import pytest

MIMOSA = 'inform(food="mediterranean",pricerange="expensive",name="la mimosa",area="centre")'
SHIRAZ = 'inform(food="mediterranean",pricerange="expensive",name="shiraz restaurant",area="centre")'

ROWS = [
    # (act a, prompt a, act a', prompt a', TM, DM, CE~, CM, USE ang, USE cos, BLEU-4, BERTScore)
    (
        "request(pricerange)",
        "what price range are you interested in",
        "request(food)",
        "what kind of food are you looking for",
        0,
        1,
        0.5,
        0.2,
        0.68,
        0.54,
        0.07,
        0.82,
    ),
    (
        "request(food)",
        "what type of food are you looking for",
        "request(pricerange)",
        "what price range are you interested in",
        0,
        1,
        0.5,
        0.2,
        0.67,
        0.52,
        0.07,
        0.83,
    ),
    (
        MIMOSA,
        "la mimosa is a expensive mediterranean restaurant in the centre area",
        MIMOSA,
        "la mimosa is a expensive mediterranean restaurant in the centre area",
        1,
        1,
        1,
        1,
        1.00,
        1.00,
        1.00,
        1.00,
    ),
    (
        SHIRAZ,
        "shiraz restaurant is in the centre area and is expensively priced and serves mediterranean food",
        SHIRAZ,
        "shiraz restaurant is in the centre area and serves mediterranean food and is expensively priced",
        1,
        1,
        1,
        1,
        0.95,
        0.99,
        0.80,
        0.98,
    ),
    (
        MIMOSA,
        "la mimosa is in the centre area that is expensively priced and serves mediterranean food",
        "request(pricerange)",
        "what price range would you like",
        0,
        0,
        0,
        0.1,
        0.53,
        0.09,
        0.00,
        0.61,
    ),
]


@pytest.fixture(scope="session")
def appendix_a():
    """(act a, prompt a, act a', prompt a', TM, DM, CE~, CM, USE ang, USE cos, BLEU-4, BERTScore) per row."""
    return ROWS


@pytest.fixture(scope="session")
def tiny_sts_model(tmp_path_factory):
    """A bi-encoder (train-sts's default) trained by ``train_sts`` for two steps on 32 STS-B pairs:
    the real model format and code path of STSScore in seconds (its values mean nothing)."""
    from behavsim._sts_train import STSTrainConfig, train_sts  # private: a small STS model built in the test

    out = tmp_path_factory.mktemp("sts") / "model"
    return train_sts(out, STSTrainConfig(limit=32, epochs=1, threads=1), progress=False, say=lambda m: None)


@pytest.fixture(scope="session")
def tiny_sts_cross_model(tmp_path_factory):
    """As ``tiny_sts_model``, a cross-encoder (``architecture="cross"``, its default loss bce)."""
    from behavsim._sts_train import STSTrainConfig, train_sts  # private: a small STS model built in the test

    out = tmp_path_factory.mktemp("sts-cross") / "model"
    config = STSTrainConfig(limit=32, epochs=1, threads=1, architecture="cross")
    return train_sts(out, config, progress=False, say=lambda m: None)


@pytest.fixture(scope="session")
def tiny_sts_mse_model(tmp_path_factory):
    """As ``tiny_sts_cross_model``, trained to predict the 0-5 label itself (``loss="mse"``)."""
    from behavsim._sts_train import STSTrainConfig, train_sts  # private: a small STS model built in the test

    out = tmp_path_factory.mktemp("sts-mse") / "model"
    config = STSTrainConfig(limit=32, epochs=1, threads=1, architecture="cross", loss="mse")
    return train_sts(out, config, progress=False, say=lambda m: None)
