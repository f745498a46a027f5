"""Stand-in for PyDial3's ontology/Ontology.py: reads <domain>-rules.json by relative path."""

import json

from utils import Settings

global_ontology = None


class _FlatOntologyManager:
    def __init__(self):
        domains = [d.strip() for d in Settings.config.get("GENERAL", "domains").split(",")]
        self.ontologies = {}
        for d in domains:
            with open("ontology/ontologies/" + d + "-rules.json") as fh:  # relative, as PyDial does
                self.ontologies[d] = json.load(fh)

    def get_method(self, d):
        return self.ontologies[d]["method"]

    def get_discourseAct(self, d):
        acts = self.ontologies[d]["discourseAct"]
        for a in ("none", "bye"):
            if a not in acts:
                acts.append(a)
        return acts

    def get_informable_slots(self, d):
        return list(self.ontologies[d]["informable"])

    def get_informable_slots_and_values(self, d):
        return {s: list(v) for s, v in self.ontologies[d]["informable"].items()}

    def get_len_informable_slot(self, d, slot):
        return len(self.ontologies[d]["informable"][slot])

    def get_sorted_system_requestable_slots(self, d):
        return sorted(self.ontologies[d]["system_requestable"])


def init_global_ontology():
    global global_ontology
    global_ontology = _FlatOntologyManager()
