"""Stand-in for PyDial3's policy/Policy.py: state kept between turns, summary -> master act."""

from ontology import Ontology
from utils import Settings

VENUES = ["the golden fork", "pasta palace", "curry corner"]


def top(dist):
    items = [(v, p) for v, p in dist.items() if v != "**NONE**"]
    items.sort(key=lambda vp: (-vp[1], vp[0]))
    return items[0] if items else ("**NONE**", 0.0)


class Policy:
    def __init__(self, domainString, learning=False):
        self.domainString = domainString
        self.learning = learning
        self.lastSystemAction = None
        self.actToBeRecorded = None
        self.turns_since_restart = 0
        slots = Ontology.global_ontology.get_sorted_system_requestable_slots(domainString)
        self.action_names = ["request_" + s for s in slots] + ["inform"]

    def restart(self):
        self.lastSystemAction = None
        self.actToBeRecorded = None
        self.turns_since_restart = 0

    def convert(self, belief, summary):
        self.turns_since_restart += 1
        if summary.startswith("request_"):
            return "request(%s)" % summary.split("_", 1)[1]
        slots = Ontology.global_ontology.get_sorted_system_requestable_slots(self.domainString)
        name = Settings.random.choice(VENUES)  # PyDial picks one matching venue at random
        items = ['name="%s"' % name] + ['%s="%s"' % (s, top(belief["beliefs"][s])[0]) for s in slots]
        return "inform(%s)" % ",".join(items)
