"""Stand-in for PyDial3's semo/SemOManager.py: templates read lazily by relative path."""

import json
import random

from utils import Settings


class SemOManager:
    def __init__(self):
        self.templates = {}

    def generate(self, act, domainTag=None):
        if domainTag not in self.templates:
            with open(Settings.config.get("semo_" + domainTag, "templatefile")) as fh:
                self.templates[domainTag] = json.load(fh)
        items = list(act.items)
        random.shuffle(items)  # PyDial's BasicTemplateRule.match_act shuffles with `random`
        text = self.templates[domainTag].get(act.act, act.to_string())
        return text.replace("$SLOTS", " and ".join(sorted(items)))
