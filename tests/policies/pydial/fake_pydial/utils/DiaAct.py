"""Stand-in for PyDial3's utils/DiaAct.py (only what the template generator needs)."""


class DiaAct:
    def __init__(self, act):
        self._text = act.strip()
        self.act = self._text.split("(", 1)[0]
        inner = self._text[len(self.act) + 1 : -1]
        self.items = [part.split("=", 1)[0] for part in inner.split(",") if part]

    def to_string(self):
        return self._text
