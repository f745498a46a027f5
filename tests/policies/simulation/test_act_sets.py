"""The environment plays act sets (``a(...)|b(...)``), the turns of a system that says several
things at once — a human wizard, or a model trained on wizards: one turn, one user reply."""

from __future__ import annotations

import pytest

from behavsim import ConfigError
from policies.handcrafted.policy import HandcraftedPolicy
from policies.simulation.domain import resolve_domain
from policies.simulation.env import DialogueEnv
from policies.simulation.nlg import TemplateNLG
from policies.training.play import play_dialogues

CAM = resolve_domain("camrestaurants")


def _env(seed: int = 0) -> tuple[DialogueEnv, dict]:
    env = DialogueEnv(CAM, user_config="env1")
    _, info = env.reset(seed=seed)
    return env, info


def test_a_set_of_two_requests_is_one_turn_and_the_user_answers_both_in_one_reply():
    env, info = _env(0)
    # seed 0: food=mediterranean, area and price range dontcare; the user named only the type
    assert info["goal"]["constraints"] == {"pricerange": "dontcare", "area": "dontcare", "food": "mediterranean"}
    assert info["user_act"] == 'inform(type="restaurant")'
    _, reward, terminated, truncated, info = env.step_act("request(pricerange)|request(area)")
    assert (reward, terminated, truncated, info["turns"]) == (-1.0, False, False, 1)
    ex = env.exchanges[-1]
    # the set in canonical order, its types alike; the reply is the answer to the last request
    # the user received, and it names its slot (after two requests "this" would not say which)
    assert ex["system_act"] == info["master_act"] == "request(area)|request(pricerange)"
    assert ex["system_act_type"] == "request|request"
    assert ex["user_act"] == 'inform(pricerange="dontcare")'
    assert (ex["reprompt"], ex["confirmation"], ex["informed_venue"]) == (False, False, False)
    nlg = TemplateNLG(0)  # the prompt: each act's words in turn, as a fresh generator says them
    assert info["prompt"] == nlg.generate("request(area)") + " " + nlg.generate("request(pricerange)")


def test_the_same_set_again_is_a_reprompt_whatever_its_order_and_costs_one_patience():
    env, _ = _env(0)
    patience = env.user.patience
    env.step_act("request(pricerange)|request(area)")
    env.step_act(["request(area)", "request(pricerange)"])  # a sequence: the same set
    assert env.exchanges[-1]["reprompt"] is True
    assert env.user.patience == patience - 1
    env.step_act("request(area)")  # one of its acts alone is another turn
    assert env.exchanges[-1]["reprompt"] is False and env.user.patience == patience - 1


def test_a_set_with_bye_ends_the_dialogue_and_an_act_the_user_does_not_know_is_left_out():
    env, _ = _env(0)
    _, _, terminated, truncated, info = env.step_act("welcome()|bye()")
    assert (terminated, truncated) == (True, False)
    assert info["master_act"] == "bye()|welcome()" and info["user_act"] == "bye()"


def test_a_venue_informed_inside_a_set_counts_for_success_and_the_log():
    env, _ = _env(0)
    env.user.goal.requests = {"name": None}
    # the first mediterranean venue in the database, offered beside a question
    venue = next(v for v in CAM.venues if v["food"] == "mediterranean")
    _, _, _, _, info = env.step_act(f'inform(food="mediterranean",name="{venue["name"]}")|reqmore()')
    assert env.exchanges[-1]["informed_venue"] is True
    assert info["success"] is True and env.user.goal.requests["name"] == venue["name"]


@pytest.mark.parametrize("act", ["request(food)", ["request(food)"], ("request(food)", "request(food)")])
def test_a_set_of_one_act_plays_exactly_as_the_act(act):
    a, _ = _env(3)
    b, _ = _env(3)
    a.step_act("request(food)")
    b.step_act(act)
    assert a.exchanges == b.exchanges and a.belief == b.belief


@pytest.mark.parametrize(
    ("act", "problem"),
    [("inform(food=|request(area)", "cannot parse"), ([], "an empty act set"), (3, "expected an act string")],
)
def test_a_bad_act_set_is_one_clear_error(act, problem):
    env, _ = _env(0)
    with pytest.raises(ConfigError, match=f"not a system act: .*{problem}"):
        env.step_act(act)


def test_play_dialogues_measures_a_policy_that_answers_act_sets():
    """A policy answering the handcrafted act and a greeting the user does not know (an act set
    every turn) plays the handcrafted policy's dialogues: the same successes and lengths."""
    from behavsim.policy import answer_context, as_adapter

    hdc = as_adapter("handcrafted", domain=CAM)

    def with_greeting(belief):
        return answer_context(hdc, belief, None).act + "|welcome()"

    alone = play_dialogues("handcrafted", 20)
    sets = play_dialogues(with_greeting, 20)
    assert sets.failed_turns == 0 and sets.first_failure is None
    assert (sets.success, sets.turns) == (alone.success, alone.turns)
    assert sets.tsr == alone.tsr > 0.5


def test_words_alone_close_a_dialogue_after_the_user_s_bye_and_end_it_as_a_failure_anywhere_else():
    """A model of people says goodbye without an act (the corpus's wizards wrote none there): in
    the closing turn after the user's bye() the agent says bye() whatever the system chose, so
    words alone there play as the handcrafted policy's bye; on any other turn there is no act to
    play and the dialogue ends as a failure."""
    from behavsim.policy import answer_context, as_adapter

    hdc = as_adapter("handcrafted", domain=CAM)

    def goodbye_in_words(belief):
        act = answer_context(hdc, belief, None).act
        return (None, "thank you, goodbye.") if act == "bye()" else act

    def words_only(belief):
        return (None, "hello.")

    alone = play_dialogues("handcrafted", 20)
    words = play_dialogues(goodbye_in_words, 20)
    assert words.failed_turns == 0 and words.first_failure is None
    assert (words.success, words.turns) == (alone.success, alone.turns) and words.tsr == alone.tsr > 0.5
    never = play_dialogues(words_only, 5)
    assert never.failed_turns == 5 and never.tsr == 0.0
    assert never.first_failure == "a text-only answer (no act to play)"


def test_only_the_closing_turn_takes_no_act():
    from policies.simulation.env import EnvError

    env, _ = _env()
    assert not env.closing
    with pytest.raises(EnvError, match=r"only the closing turn after the user's bye\(\) takes no act"):
        env.step_closing()
    hdc = HandcraftedPolicy(CAM)
    belief, info = env.reset(seed=0)
    while not env.closing:
        belief, _, term, trunc, info = env.step(hdc.summary_action(belief))
        assert not (term or trunc)
    assert info["user_act_type"] == "bye"
    belief, reward, term, trunc, info = env.step_closing()
    assert (term, trunc, reward, info["closing_turn"]) == (True, False, -1.0, True)
    assert (
        info["master_act"] == "bye()" and info["chosen_act"] == "None" and info["exchanges"][-1]["user_act"] == "null()"
    )
    assert not env.closing
    with pytest.raises(EnvError):
        env.step_closing()
