from behavsim import parse_act
from policies.simulation.nlg import TemplateNLG

ACTS = [
    'inform(name="shiraz",area="centre",pricerange="expensive",food="mediterranean")',
    "request(area)",
    "request(food)",
    "request(pricerange)",
    'confirm(food="thai")',
    'select(area="north",area="south")',
    "bye()",
    "reqmore()",
    "hello()",
    'inform(name=none,area="centre",food="korean")',
    'inform(name="x",phone="01223 1")',
]


def test_deterministic_and_lower_case():
    a, b = TemplateNLG(3), TemplateNLG(3)
    for act in ACTS:
        p = a.generate(act)
        assert p == b.generate(act) == a.generate(parse_act(act))
        assert p == p.lower() and p


def test_item_order_does_not_matter():
    n = TemplateNLG(0)
    assert n.generate('inform(name="shiraz",area="centre",food="thai")') == n.generate(
        'inform(food="thai",name="shiraz",area="centre")'
    )


def test_seeds_paraphrase_differently():
    act = 'inform(name="shiraz",area="centre",pricerange="expensive",food="mediterranean")'
    prompts = {TemplateNLG(s).generate(act) for s in range(20)}
    assert len(prompts) >= 5
    for p in prompts:
        assert "shiraz" in p and "centre" in p and "mediterranean" in p and "expensive" in p
    for act_type in (
        "bye()",
        "reqmore()",
        "hello()",
        "request(food)",
        'confirm(area="north")',
        'select(area="north",area="south")',
        'inform(name=none,food="thai")',
    ):
        assert len({TemplateNLG(s).generate(act_type) for s in range(30)}) >= 3


def test_pinned_prompt():
    # blake2b-based choice: stable across processes and Python versions
    assert TemplateNLG(0).generate("request(food)") == TemplateNLG(0).generate("request(food)")
    assert TemplateNLG(0).signature == "nlg:template|seed:0|version:1"
