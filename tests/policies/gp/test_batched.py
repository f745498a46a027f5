"""The batched path of the built-in policies against their per-context path (the reference):
GP-SARSA's many greedy choices at once (ties, near-ties, rounding that flips a comparison), the
context set's shared work, and whole tables of checkpoints and the handcrafted policy on generated,
collected and randomly disturbed contexts."""

from __future__ import annotations

import json

import numpy as np
import pytest

from behavsim import ContextSet
from behavsim.policy import respond
from policies.gp.policy import GPSarsaPolicy
from policies.gp.sarsa import GPSarsa
from policies.handcrafted.policy import HandcraftedPolicy
from policies.simulation.actions import action_mask, to_master_act
from policies.simulation.batch import context_batch, is_canonical
from policies.simulation.domain import resolve_domain
from policies.simulation.features import belief_vector


def learner_with(X: np.ndarray, actions: np.ndarray, alpha: np.ndarray, n_actions: int) -> GPSarsa:
    """A learner whose dictionary holds the points ``X`` of ``actions`` with weights ``alpha`` (what a
    greedy decision reads; the other arrays are neutral)."""
    m, dim = X.shape
    counts = np.bincount(actions, minlength=n_actions)
    arrays = {
        "X": X,
        "actions": actions,
        "alpha": alpha,
        "C": np.zeros((m, m)),
        "Kinv": np.concatenate([np.eye(c).ravel() for c in counts]),
        "U": np.zeros((m, 0)),
        "sinv": np.zeros(0),
    }
    return GPSarsa.from_state(arrays, GPSarsa(n_actions, dim).get_state()[1])


def reference(learner: GPSarsa, B: np.ndarray, masks: np.ndarray) -> list:
    """:meth:`GPSarsa.select` on every row: the choice, or the exception it raises."""
    out = []
    for b, m in zip(B, masks):
        try:
            out.append(learner.select(b, m))
        except ValueError as exc:
            out.append(exc)
    return out


def test_rounding_that_flips_a_comparison_is_caught():
    """Actions 0 and 1 hold the same points and weights in another dictionary order, with weights
    that cancel: their means are equal in exact arithmetic and differ by rounding, differently in
    the per-context sums and in the product. Every choice greedy_many is certain of is select's,
    and the fast argmax alone would be wrong on some rows (so the check is needed)."""
    rng = np.random.default_rng(0)
    dim, A = 12, 4
    base = rng.random((6, dim))
    pts = np.concatenate([base, base + 1e-9 * rng.random((6, dim))])
    w = np.concatenate([np.full(6, 1e13), np.full(6, -1e13)]) * rng.choice([1.0, 2.0], 12)
    X = np.concatenate([pts, pts[::-1], rng.random((5, dim)), rng.random((3, dim))])
    alpha = np.concatenate([w, w[::-1], rng.normal(size=5) * 1e-3, rng.normal(size=3) * 1e-3])
    actions = np.array([0] * 12 + [1] * 12 + [2] * 5 + [3] * 3)
    order = rng.permutation(len(actions))  # interleaved, as a dictionary grows
    learner = learner_with(X[order], actions[order], alpha[order], A)
    B = rng.random((4000, dim))
    masks = rng.random((4000, A)) < 0.8
    masks[:50] = False  # no allowed action: select raises, never certain
    choice, certain = learner.greedy_many(B, masks)
    ref = reference(learner, B, masks)
    assert all(choice[r] == ref[r] for r in np.flatnonzero(certain))
    assert not certain[:50].any() and all(isinstance(x, ValueError) for x in ref[:50])
    q = B @ np.stack([(alpha[actions == a, None] * X[actions == a]).sum(0) for a in range(A)]).T
    naive = np.where(masks, q, -np.inf).argmax(1)
    wrong = [r for r in range(50, 4000) if naive[r] != ref[r]]
    assert wrong and not certain[wrong].any()
    assert certain.sum() > 1000  # the rows where actions 0 and 1 do not lead are decided at once


def test_exact_ties_and_actions_without_points():
    """Means that are exactly 0 (actions without dictionary points, an empty dictionary) tie
    exactly in both paths: the lowest allowed action, certain without a second look."""
    rng = np.random.default_rng(1)
    dim, A = 5, 6
    B = rng.random((300, dim))
    masks = rng.random((300, A)) < 0.6
    masks[:, 5] = True
    empty = GPSarsa(A, dim)
    choice, certain = empty.greedy_many(B, masks)
    assert certain.all() and (choice == masks.argmax(1)).all()
    # only actions 0 and 1 have points, with negative means: the lowest allowed of 2..5 wins
    X = rng.random((4, dim))
    learner = learner_with(X, np.array([0, 1, 0, 1]), -rng.random(4), A)
    choice, certain = learner.greedy_many(B, masks)
    ref = reference(learner, B, masks)
    assert certain.all() and list(choice) == ref
    # identical points for two actions: equal means, however rounded: decided by select
    twin = learner_with(np.concatenate([X, X]), np.array([0, 0, 0, 0, 2, 2, 2, 2]), np.tile(rng.random(4), 2), A)
    masks[:, :3] = True
    choice, certain = twin.greedy_many(B, masks)
    twin_ref = reference(twin, B, masks)
    assert list(choice[certain]) == [r for r, c in zip(twin_ref, certain) if c]


@pytest.fixture(scope="module")
def domain():
    return resolve_domain(None)


@pytest.fixture(scope="module")
def mixed_contexts(contexts, contexts_with_histories):
    """The grid (ties at 0.5), collected contexts and the same disturbed at random, and a copy of
    some with their keys in reverse order (the per-context path gives policies sorted copies)."""
    from contexts import perturb

    noisy = perturb(contexts_with_histories, 0.4, seed=3)
    beliefs = list(contexts.beliefs) + list(contexts_with_histories.beliefs) + list(noisy.beliefs)

    def reverse(obj):
        if isinstance(obj, dict):
            return {k: reverse(obj[k]) for k in reversed(list(obj))}
        return obj

    beliefs += [reverse(b) for b in beliefs[::7]]
    return ContextSet(beliefs)


def _rows(table) -> str:
    return json.dumps([table.header(), table.rows()])


def test_shared_work_is_the_per_context_paths(mixed_contexts, domain):
    batch = context_batch(mixed_contexts, domain)
    assert context_batch(ContextSet(list(mixed_contexts.beliefs)), domain) is batch  # by content
    rows = np.arange(len(mixed_contexts))
    vec, masks, ok = batch.vectors(rows)
    assert ok.all()
    sorted_copies = [json.loads(json.dumps(b, sort_keys=True)) for b in mixed_contexts.beliefs]
    assert not all(is_canonical(b) for b in mixed_contexts.beliefs) and all(is_canonical(b) for b in sorted_copies)
    for i, b in enumerate(sorted_copies):
        assert np.array_equal(vec[i], belief_vector(b, domain)) and np.array_equal(masks[i], action_mask(b, domain))
    acts = rows % len(batch.actions)
    ids, failed = batch.master_acts(rows, acts)
    assert not failed
    assert [batch.act_text(k) for k in ids] == [
        to_master_act(batch.actions[a], b, domain) for a, b in zip(acts, sorted_copies)
    ]


def test_checkpoint_tables_equal_the_per_context_ones(run_dir, mixed_contexts):
    ckpts = sorted(str(p) for p in run_dir.rglob("ckpt-*.npz"))
    assert len(ckpts) >= 4
    for spec in ckpts + [f"checkpoint:{ckpts[-1]}:nlg_seed=5"]:
        assert _rows(respond(spec, mixed_contexts)) == _rows(respond(spec, mixed_contexts, per_context=True))


def test_policies_with_ties_sampling_and_no_prompts(run_dir, mixed_contexts, domain):
    from policies.gp.checkpoint import load_checkpoint

    trained = load_checkpoint(sorted(run_dir.rglob("ckpt-*.npz"))[-1])
    L = trained.learner
    state, meta = L.get_state()
    acts = state["actions"]
    first = int(np.bincount(acts).argmax())
    twin = acts.copy()
    twin[acts == first] = (first + 1) % L.n_actions  # another action gets the same points: exact-in-theory ties
    both = learner_with(
        np.concatenate([state["X"], state["X"][acts == first]]),
        np.concatenate([acts, twin[acts == first]]),
        np.concatenate([state["alpha"], state["alpha"][acts == first]]),
        L.n_actions,
    )
    policies = [
        GPSarsaPolicy(domain, learner=both, name="twins"),
        GPSarsaPolicy(domain, name="untrained", nlg_seed=None),
        GPSarsaPolicy(domain, learner=L, name="sampling", eval_scale=1.0, eval_seed=4),
        HandcraftedPolicy(domain),
        HandcraftedPolicy(domain, nlg_seed=7),
        HandcraftedPolicy(domain, nlg_seed=None),
    ]
    for pol in policies:
        batched = respond(pol, mixed_contexts)
        if pol.name == "sampling":  # the same random stream, context after context
            pol = GPSarsaPolicy(domain, learner=L, name="sampling", eval_scale=1.0, eval_seed=4)
        assert _rows(batched) == _rows(respond(pol, mixed_contexts, per_context=True)), pol.name
    assert GPSarsaPolicy(domain, learner=L, eval_scale=1.0).respond_batch(mixed_contexts, [0]) is None
