import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from behavsim import ActParseError, DialogueAct, canonical_act, format_act, format_acts, parse_act, parse_acts


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


@pytest.mark.parametrize(
    "text, position, problem",
    [
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
    ],
)
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

    def body(xs):
        return ",".join(f'{s}="{v.replace(chr(92), chr(92) * 2).replace(chr(34), chr(92) + chr(34))}"' for s, v in xs)

    assert parse_act(f"{act_type}({body(its)})") == parse_act(f"{act_type}({body(shuffled)})")


def test_negated_items_pydial_inform_alternatives():
    a = parse_act('inform(name=none,name!="pizza palace",area=centre)')
    assert ("name!", "pizza palace") in a.items
    assert format_act(a) == 'inform(area="centre",name="none",name!="pizza palace")'
    assert parse_act(format_act(a)) == a
    assert a != parse_act('inform(name=none,name="pizza palace",area=centre)')
    with pytest.raises(ActParseError, match="expected ',' or '\\)'"):
        parse_act("inform(name!x)")


# ---------------------------------------------------------------------------- act sets
def test_act_set_parses_to_its_distinct_acts_in_canonical_order():
    acts = parse_acts(" request(food) | inform(area = south,pricerange=cheap)")
    assert acts == (parse_act("inform(area=south,pricerange=cheap)"), parse_act("request(food)"))
    assert canonical_act("request(food)|inform(pricerange=cheap,area=south)") == (
        'inform(area="south",pricerange="cheap")|request(food)'
    )
    # a set: order and repetition do not matter; a set of one act is that act
    assert parse_acts("bye()|hello()|bye()") == parse_acts("hello()|bye()")
    assert canonical_act("bye()|bye()") == "bye()"
    assert parse_act("bye() | bye()") == parse_act("bye()")
    # two acts of one type stay two acts (PyDial's no-venue act beside an offer)
    assert len(parse_acts("inform(name=none)|inform(name=x,area=east)")) == 2


def test_a_single_act_is_a_set_of_one():
    for text in ("request(food)", 'inform(name="la mimosa",area=centre)', "bye()", "inform(food=a|b)"):
        assert parse_acts(text) == (parse_act(text),)
        assert canonical_act(text) == format_act(parse_act(text))
    # a '|' inside the parentheses is part of a bare value, as it always was
    assert parse_act("inform(food=a|b)").items == (("food", "a|b"),)
    assert parse_acts(parse_act("bye()")) == (parse_act("bye()"),)
    assert parse_acts((parse_act("request(food)"), parse_act("bye()"))) == parse_acts("bye()|request(food)")


def test_parse_act_refuses_a_set_and_names_where():
    with pytest.raises(ActParseError) as err:
        parse_act("inform(food=a|b) |request(area)")
    assert err.value.position == 17
    assert "an act set of 2 acts" in str(err.value) and "parse_acts" in str(err.value)


@pytest.mark.parametrize(
    "text, position, problem",
    [
        ("inform()|", 9, "expected a dialogue-act type"),
        ("inform()||bye()", 9, "expected a dialogue-act type"),
        ("|bye()", 0, "expected a dialogue-act type"),
        ("inform() bye()", 9, "unexpected text after ')'"),
        ("inform()|bye", 12, "expected '('"),
    ],
)
def test_malformed_act_sets_name_the_string_and_position(text, position, problem):
    with pytest.raises(ActParseError) as err:
        parse_acts(text)
    assert err.value.position == position
    assert problem in str(err.value)


def test_parse_acts_type_error():
    with pytest.raises(TypeError, match="must be a string"):
        parse_acts(42)
    with pytest.raises(TypeError, match="must be a string"):
        parse_acts(())


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(names, items), min_size=1, max_size=4), st.randoms(use_true_random=False))
def test_act_set_print_parse_and_order(parts, rnd):
    acts = [DialogueAct.create(t, its) for t, its in parts]
    text = "|".join(format_act(a) for a in acts)
    shuffled = list(acts)
    rnd.shuffle(shuffled)
    assert parse_acts(text) == parse_acts("|".join(format_act(a) for a in shuffled))
    assert set(parse_acts(text)) == set(acts) and len(parse_acts(text)) == len(set(acts))
    assert parse_acts(format_acts(acts)) == parse_acts(text)
    assert canonical_act(canonical_act(text)) == canonical_act(text) == format_acts(acts)
