"""Stand-in for PyDial3's policy/HDCPolicy.py: ask for the first unsure slot, else inform."""

from ontology import Ontology
from policy.Policy import Policy, top


class HDCPolicy(Policy):
    def __init__(self, domainString):
        super().__init__(domainString, False)

    def nextAction(self, belief):
        if self.turns_since_restart:
            raise RuntimeError("stand-in HDCPolicy: state carried over from another context (restart() not called)")
        for s in Ontology.global_ontology.get_sorted_system_requestable_slots(self.domainString):
            if top(belief["beliefs"][s])[1] < 0.8:
                self.actToBeRecorded = "request_" + s
                return self.convert(belief, self.actToBeRecorded)
        self.actToBeRecorded = "inform"
        return self.convert(belief, "inform")
