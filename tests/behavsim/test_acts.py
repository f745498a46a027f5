import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from behavsim import ActParseError, DialogueAct, canonical_act, format_act, parse_act


def test_parse_simple_forms():
    assert parse_act("request(food)") == DialogueAct("request", (("food", ""),))
    assert parse_act("bye()") == DialogueAct("bye", ())
    assert parse_act("  Hello ( )  ") == DialogueAct("hello", ())
    a = parse_act('inform(name="la mimosa",food=mediterranean,area="centre")')
    assert a.act_type == "inform"
    assert a.items == (("area", "centre"), ("food", "mediterranean"), ("name", "la mimosa"))


def test_item_order_quotes_case_and_whitespace_do_not_matter():
    a = parse_act('inform(food="mediterranean",pricerange="expensive",name="la mimosa",area="centre")')
    b = parse_act('INFORM( area = centre , Name="la mimosa", pricerange=expensive,food = "mediterranean" )')
    assert a == b
    assert format_act(a) == 'inform(area="centre",food="mediterranean",name="la mimosa",pricerange="expensive")'


def test_values_keep_their_case():
    assert parse_act("inform(name=Pizza)") != parse_act("inform(name=pizza)")


def test_multiset_slots_and_empty_values():
    a = parse_act("select(area=south,area=north)")
    assert a.items == (("area", "north"), ("area", "south"))
    assert parse_act('request(food="")') == parse_act("request(food)")
    assert parse_act("confirm(area=north,area=north)") != parse_act("confirm(area=north)")


def test_quoted_values_with_special_characters_round_trip():
    text = r'inform(name="the (new) place, \"best\" = yes",addr="1 a\\b street")'
    a = parse_act(text)
    assert dict(a.items)["name"] == 'the (new) place, "best" = yes'
    assert dict(a.items)["addr"] == "1 a\\b street"
    assert parse_act(format_act(a)) == a


def test_item_sequence_and_concepts():
    a = parse_act("request(food)")
    assert a.item_sequence() == ["food", ""]
    assert a.concepts() == {("slot", "food"), ("pair", "food", "")}


@pytest.mark.parametrize("text, position, problem", [
    ("", 0, "empty"),
    ("inform", 6, "expected '('"),
    ("inform(name=x", 13, "expected ',' or ')'"),
    ('inform(name="x)', 12, "unterminated"),
    ("inform(name=x) extra", 15, "unexpected text"),
    ("inform(=x)", 7, "expected a slot name"),
    ("inform(a=b=c)", 10, "unexpected '='"),
    ('inform(a="x\\q")', 11, "unknown escape"),
    ("(food)", 0, "expected a dialogue-act type"),
    ("inform(a=b,)", 11, "expected a slot name"),
])
def test_malformed_strings_name_the_string_and_position(text, position, problem):
    with pytest.raises(ActParseError) as err:
        parse_act(text)
    assert err.value.position == position
    assert problem in str(err.value)
    assert repr(text) in str(err.value)


def test_non_string_is_a_type_error():
    with pytest.raises(TypeError, match="must be a string"):
        parse_act(42)


names = st.text(alphabet="abcdefghijklmnopqrstuvwxyz_", min_size=1, max_size=8)
values = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=12).map(str.strip)
items = st.lists(st.tuples(names, values), max_size=6)


@settings(max_examples=300, deadline=None)
@given(names, items)
def test_parse_of_print_is_identity(act_type, its):
    act = DialogueAct.create(act_type, its)
    assert parse_act(format_act(act)) == act
    assert canonical_act(format_act(act)) == format_act(act)


@settings(max_examples=200, deadline=None)
@given(names, items, st.randoms(use_true_random=False))
def test_item_order_never_changes_equality(act_type, its, rnd):
    shuffled = list(its)
    rnd.shuffle(shuffled)
    assert DialogueAct.create(act_type, its) == DialogueAct.create(act_type, shuffled)
    body = lambda xs: ",".join(f'{s}="{v.replace(chr(92), chr(92) * 2).replace(chr(34), chr(92) + chr(34))}"' for s, v in xs)
    assert parse_act(f"{act_type}({body(its)})") == parse_act(f"{act_type}({body(shuffled)})")


def test_negated_items_pydial_inform_alternatives():
    a = parse_act('inform(name=none,name!="pizza palace",area=centre)')
    assert ("name!", "pizza palace") in a.items
    assert format_act(a) == 'inform(area="centre",name="none",name!="pizza palace")'
    assert parse_act(format_act(a)) == a
    assert a != parse_act('inform(name=none,name="pizza palace",area=centre)')
    with pytest.raises(ActParseError, match="expected ',' or '\\)'"):
        parse_act("inform(name!x)")
