"""Stand-in for PyDial3's utils/Settings.py: module-global config and random generator."""

import configparser

import numpy.random as nprandom

config = None
random = None
root = ""


def init(config_file, seed=None):
    load_config(config_file)
    load_root()
    if seed is None and config.has_option("GENERAL", "seed"):
        seed = config.getint("GENERAL", "seed")
    return set_seed(seed)


def load_config(config_file):
    global config
    config = configparser.ConfigParser(allow_no_value=True)
    if config_file is not None:
        config.read(config_file)


def load_root(rootIn=None):
    global root
    root = rootIn or ""


def set_seed(seed):
    global random
    if seed is None:
        seed = 12345
    random = nprandom.RandomState(seed)
    return seed
