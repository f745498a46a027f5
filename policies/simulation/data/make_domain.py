"""Deterministic generator of behavsim's built-in restaurant domain.

Writes ``behavsim-restaurants-rules.json`` (ontology, PyDial's rules format) and
``behavsim-restaurants-dbase.db`` (SQLite table ``BehavsimRestaurants``) next to this file.
All names, addresses and descriptions are invented here; nothing is taken from PyDial's data.

The venue mix mirrors the spirit of a university-town restaurant guide: most venues in the
centre, expensive places more common than cheap ones, a long tail of cuisines. Venues are
made in small *clusters* that share area, food and price range, so that a user goal with all
three constraints set usually has two or three matching venues, as PyDial's goal generator needs.

Run ``python -m policies.simulation.data.make_domain`` (or this file) to regenerate; the output is
byte-for-byte reproducible for a given ``SEED``.
"""

from __future__ import annotations

import json
import random
import sqlite3
from pathlib import Path

SEED = 20240611
TABLE = "BehavsimRestaurants"
HERE = Path(__file__).resolve().parent
RULES_FILE = "behavsim-restaurants-rules.json"
DB_FILE = "behavsim-restaurants-dbase.db"

AREAS = {"centre": 0.42, "north": 0.14, "south": 0.14, "east": 0.14, "west": 0.16}
PRICES = {"expensive": 0.42, "moderate": 0.32, "cheap": 0.26}
# cuisine -> (relative weight, signature dishes)
FOODS = {
    "indian": (8, ["lamb rogan josh", "paneer tikka", "king prawn bhuna"]),
    "chinese": (7, ["crispy aromatic duck", "salt and pepper squid", "mapo tofu"]),
    "italian": (6, ["wild mushroom risotto", "osso buco", "truffle tagliatelle"]),
    "british": (5, ["beef wellington", "fish and chips", "sticky toffee pudding"]),
    "european": (3, ["duck confit", "pork belly with apple", "seared scallops"]),
    "modern european": (3, ["beetroot carpaccio", "venison loin", "cod with samphire"]),
    "asian oriental": (3, ["pad thai", "laksa", "teriyaki salmon"]),
    "gastropub": (3, ["slow braised ox cheek", "pie of the day", "ploughman's platter"]),
    "mediterranean": (2, ["grilled halloumi", "lamb kofta", "meze platter"]),
    "french": (2, ["coq au vin", "bouillabaisse", "steak frites"]),
    "turkish": (2, ["iskender kebab", "lahmacun", "imam bayildi"]),
    "international": (2, ["tasting menu", "fusion tacos", "sharing boards"]),
    "thai": (2, ["green curry", "tom yum soup", "massaman beef"]),
    "japanese": (2, ["sushi platter", "chicken katsu", "ramen"]),
    "spanish": (2, ["paella valenciana", "patatas bravas", "gambas al ajillo"]),
    "mexican": (1, ["chilli con carne", "carnitas tacos", "enchiladas"]),
    "korean": (1, ["bibimbap", "bulgogi", "kimchi stew"]),
    "vietnamese": (1, ["pho", "banh mi", "lemongrass chicken"]),
    "seafood": (1, ["lobster thermidor", "oysters", "whole grilled sea bass"]),
    "lebanese": (1, ["shawarma", "tabbouleh", "kibbeh"]),
    "portuguese": (1, ["piri piri chicken", "bacalhau", "pastel de nata"]),
    "african": (1, ["jollof rice", "bobotie", "injera platter"]),
}
NAME_FIRST = [
    "the",
    "golden",
    "little",
    "blue",
    "old",
    "red",
    "silver",
    "green",
    "royal",
    "hidden",
    "copper",
    "velvet",
    "crooked",
    "jolly",
    "amber",
    "saffron",
    "lucky",
    "rustic",
    "quiet",
    "wandering",
]
NAME_SECOND = [
    "lantern",
    "fig",
    "olive",
    "kettle",
    "willow",
    "heron",
    "orchard",
    "spoon",
    "pepper",
    "lotus",
    "anchor",
    "compass",
    "garden",
    "harvest",
    "bamboo",
    "dragon",
    "tandoor",
    "bistro",
    "table",
    "ladle",
    "vine",
    "cellar",
    "mill",
    "quay",
    "pagoda",
    "cactus",
    "maple",
    "tavern",
    "kitchen",
    "grill",
]
STREETS = [
    "mill lane",
    "orchard road",
    "kings parade",
    "station road",
    "river walk",
    "market street",
    "hills avenue",
    "bridge street",
    "castle hill",
    "fen causeway",
    "newmarket road",
    "mill road",
    "high street",
    "victoria avenue",
    "regent street",
    "trinity lane",
    "chesterton road",
    "hope street",
    "park terrace",
    "green end",
]
AREA_POSTCODE = {"centre": "cb2", "north": "cb4", "south": "cb1", "east": "cb5", "west": "cb3"}
DESCRIPTION = [
    "{name} is a {price} {food} restaurant in the {area} of town, popular with students and locals",
    "a friendly {food} place in the {area}; {name} offers {price} dishes and a relaxed atmosphere",
    "{name} serves {food} cooking at {price} prices, a short walk from the {area} shops",
    "family run since the nineties, {name} brings {food} flavours to the {area} at {price} prices",
]


def _weighted(rng: random.Random, table: dict) -> str:
    keys = list(table)
    weights = [table[k][0] if isinstance(table[k], tuple) else table[k] for k in keys]
    return rng.choices(keys, weights=weights, k=1)[0]


def make_venues(n_venues: int = 102, seed: int = SEED) -> list[dict]:
    """Venues as dicts, in database order (deterministic for a given seed)."""
    rng = random.Random(seed)
    names = [f"{a} {b}" for a in NAME_FIRST for b in NAME_SECOND]
    rng.shuffle(names)
    venues: list[dict] = []
    triples: set[tuple[str, str, str]] = set()
    while len(venues) < n_venues:
        area, food, price = _weighted(rng, AREAS), _weighted(rng, FOODS), _weighted(rng, PRICES)
        if (area, food, price) in triples:
            continue
        triples.add((area, food, price))
        size = min(rng.choice([2, 2, 3]), n_venues - len(venues))
        for _ in range(size):
            venues.append({"area": area, "food": food, "pricerange": price})
    for i, v in enumerate(venues):
        name = names[i]
        v["id"] = str(30000 + i)
        v["name"] = name
        v["addr"] = f"{rng.randint(1, 120)} {rng.choice(STREETS)}"
        v["phone"] = f"01223 {rng.randint(300000, 499999)}"
        v["postcode"] = (
            f"{AREA_POSTCODE[v['area']]} {rng.randint(1, 9)}{rng.choice('abdefghjlnpqrstuwxyz')}{rng.choice('abdefghjlnpqrstuwxyz')}"
        )
        v["signature"] = rng.choice(FOODS[v["food"]][1])
        v["description"] = rng.choice(DESCRIPTION).format(
            name=name, price=v["pricerange"], food=v["food"], area=v["area"]
        )
    return venues


COLUMNS = ["id", "name", "addr", "area", "food", "phone", "pricerange", "postcode", "signature", "description"]


def make_rules(venues: list[dict]) -> dict:
    return {
        "type": "restaurant",
        "requestable": ["addr", "area", "food", "name", "phone", "pricerange", "postcode", "signature", "description"],
        "discourseAct": ["ack", "hello", "none", "repeat", "silence", "thankyou"],
        "method": ["none", "byconstraints", "byname", "finished", "byalternatives", "restart"],
        "system_requestable": ["area", "food", "pricerange"],
        "binary": [],
        "informable": {
            "area": sorted({v["area"] for v in venues}),
            "food": sorted({v["food"] for v in venues}),
            "name": [v["name"] for v in venues],
            "pricerange": sorted({v["pricerange"] for v in venues}),
        },
    }


def write(out_dir: Path = HERE, seed: int = SEED) -> tuple[Path, Path]:
    venues = make_venues(seed=seed)
    rules_path, db_path = out_dir / RULES_FILE, out_dir / DB_FILE
    rules_path.write_text(json.dumps(make_rules(venues), indent=1) + "\n", encoding="utf-8")
    if db_path.exists():
        db_path.unlink()
    con = sqlite3.connect(db_path)
    cols = ", ".join(f"{c} TEXT" + (" PRIMARY KEY NOT NULL" if c == "name" else "") for c in COLUMNS)
    con.execute(f'CREATE TABLE "{TABLE}" ({cols})')
    con.executemany(
        f'INSERT INTO "{TABLE}" VALUES ({", ".join("?" * len(COLUMNS))})', [[v[c] for c in COLUMNS] for v in venues]
    )
    con.commit()
    con.close()
    return rules_path, db_path


if __name__ == "__main__":
    for p in write():
        print("wrote", p)
