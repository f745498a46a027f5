"""GP-SARSA core on toy problems, against a dense reference and against a direct GP."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from policies.gp.sarsa import GPSarsa, NumericalError


# ---------------------------------------------------------------- references
class DenseReference:
    """Straight dense transcription of the sparse episodic GP-SARSA recursion (no block structure,
    eager covariance updates), used as an oracle for the optimised learner."""

    def __init__(self, gamma=1.0, sigma=5.0, nu=0.001):
        self.g, self.s2, self.nu = gamma, sigma**2, nu
        self.D = []  # (b, a)
        self.Kinv = np.zeros((0, 0))
        self.alpha = np.zeros(0)
        self.C = np.zeros((0, 0))

    def k(self, b, a):
        return np.array([float(b @ db) if da == a else 0.0 for db, da in self.D])

    def _extend(self, b, a, avec, delta):
        m = len(self.D)
        K = np.zeros((m + 1, m + 1))
        K[:m, :m] = self.Kinv + np.outer(avec, avec) / delta
        K[:m, m] = K[m, :m] = -avec / delta
        K[m, m] = 1.0 / delta
        self.Kinv = K
        self.alpha = np.append(self.alpha, 0.0)
        C = np.zeros((m + 1, m + 1))
        C[:m, :m] = self.C
        self.C = C
        self.D.append((b, a))

    def episode(self, B, A, R):
        g, s2 = self.g, self.s2
        k0 = self.k(B[0], A[0])
        a = self.Kinv @ k0
        delta = B[0] @ B[0] - k0 @ a
        if delta > self.nu:
            self._extend(B[0], A[0], a, delta)
            a = np.zeros(len(self.D))
            a[-1] = 1.0
        c = np.zeros(len(self.D))
        d = 0.0
        s = math.inf
        T = len(A)
        for i in range(1, T + 1):
            init, term = i == 1, i == T
            r = R if term else 0.0
            kp = self.k(B[i - 1], A[i - 1])
            if term:
                an = np.zeros(len(self.D))
                dn = 0.0
                dk = kp
            else:
                kn = self.k(B[i], A[i])
                an = self.Kinv @ kn
                kxx = B[i] @ B[i]
                dn = kxx - kn @ an
                dk = kp - g * kn
            coef = 0.0 if init else g * s2 / s
            d = r + coef * d - dk @ self.alpha
            if dn > self.nu:
                dks = a @ (kp - 2 * g * kn) + g * g * kxx
                cn = np.append(a - self.C @ dk + coef * c, -g)
                sn = (1 + g * g) * s2 + dks - dk @ self.C @ dk
                if not init:
                    sn += (2 * c @ dk - g * s2) * g * s2 / s
                self._extend(B[i], A[i], an, dn)
                a = np.zeros(len(self.D))
                a[-1] = 1.0
            else:
                h = a - g * an
                cn = coef * c + h - self.C @ dk
                sn = (1 + (0 if term else g * g)) * s2 + dk @ (cn + coef * c)
                if not init:
                    sn -= g * g * s2 * s2 / s
                a = an
            c, s = cn, sn
            self.alpha = self.alpha + c * d / s
            self.C = self.C + np.outer(c, c) / s

    def mean_var(self, b, a):
        k = self.k(b, a)
        return k @ self.alpha, max(b @ b - k @ self.C @ k, 0.0)


def direct_gp(episodes, sigma, b, a):
    """Posterior of Monte-Carlo GP-TD with γ = 1 and no sparsification: GP regression of the
    returns-to-go with noise σ² (H is invertible, Σ = σ² H Hᵀ)."""
    X, Y = [], []
    for B, A, R in episodes:
        for bt, at in zip(B, A):
            X.append((bt, at))
            Y.append(R)
    K = np.array([[float(x @ y) if p == q else 0.0 for y, q in X] for x, p in X])
    kx = np.array([float(b @ x) if p == a else 0.0 for x, p in X])
    G = np.linalg.solve(K + sigma**2 * np.eye(len(X)), np.column_stack([np.array(Y), kx]))
    return kx @ G[:, 0], b @ b - kx @ G[:, 1]


def random_episodes(rng, n, dim, n_actions, rank=None, max_len=6):
    basis = rng.normal(size=(rank or dim, dim))
    eps = []
    for _ in range(n):
        T = int(rng.integers(1, max_len + 1))
        coeff = rng.random(size=(T, basis.shape[0]))
        B = np.abs(coeff @ basis) if rank is None else coeff @ basis
        A = rng.integers(0, n_actions, size=T)
        eps.append((B, A.tolist(), float(rng.normal(0, 10))))
    return eps


# ---------------------------------------------------------------- tests
@pytest.mark.parametrize("flush_every", [1, 3, 48])
@pytest.mark.parametrize("nu", [0.001, 0.3])
def test_matches_dense_reference(flush_every, nu):
    rng = np.random.default_rng(1)
    eps = random_episodes(rng, 40, dim=5, n_actions=3)
    gp = GPSarsa(3, 5, nu=nu, flush_every=flush_every)
    ref = DenseReference(nu=nu)
    for B, A, R in eps:
        gp.learn_episode(B, A, R)
        ref.episode(B, A, R)
    assert gp.dictionary_size == len(ref.D)
    for _ in range(20):
        b = np.abs(rng.normal(size=5))
        mean, var = gp.q_mean_var(b)
        for a in range(3):
            rm, rv = ref.mean_var(b, a)
            assert mean[a] == pytest.approx(rm, rel=1e-8, abs=1e-8)
            assert var[a] == pytest.approx(rv, rel=1e-6, abs=1e-8)
        np.testing.assert_allclose(gp.q_mean(b), mean, rtol=1e-10, atol=1e-10)


def test_equals_direct_gp_when_dictionary_spans_the_data():
    rng = np.random.default_rng(2)
    eps = random_episodes(rng, 25, dim=6, n_actions=2, rank=3)  # beliefs live in a 3-d subspace
    gp = GPSarsa(2, 6, sigma=2.0)
    for B, A, R in eps:
        gp.learn_episode(B, A, R)
    assert gp.dictionary_sizes().max() <= 3  # ALD keeps at most a basis per action
    for _ in range(10):
        b = rng.normal(size=6)
        mean, var = gp.q_mean_var(b)
        for a in range(2):
            dm, dv = direct_gp(eps, 2.0, b, a)
            assert mean[a] == pytest.approx(dm, rel=1e-6, abs=1e-6)
            assert var[a] == pytest.approx(dv, rel=1e-6, abs=1e-6)


def test_kernel_is_dot_product_times_delta():
    gp = GPSarsa(3, 2)
    gp.learn_episode([[1.0, 2.0]], [1], 10.0)
    # one point (b0, a=1): mean(b, a) = alpha * (b·b0) for a = 1, exactly 0 for other actions
    m1 = gp.q_mean([1.0, 0.0])
    m2 = gp.q_mean([0.0, 1.0])
    assert m1[0] == m1[2] == 0.0 and m2[0] == m2[2] == 0.0
    assert m2[1] == pytest.approx(2 * m1[1])
    # prior variance is b·b for an unseen action
    _, var = gp.q_mean_var([3.0, 4.0])
    assert var[0] == pytest.approx(25.0) and var[2] == pytest.approx(25.0)
    # single-step episode, MC-GPTD: mean = k (k + σ²)⁻¹ R
    assert gp.q_mean([1.0, 2.0])[1] == pytest.approx(5.0 / (5.0 + 25.0) * 10.0)


def test_ald_threshold_controls_dictionary_growth():
    e1, e2 = np.array([1.0, 0.0]), np.array([0.0, 1.0])
    gp = GPSarsa(1, 2, nu=0.001)
    gp.learn_episode([e1, 2 * e1, e1 + 1e-4 * e2], [0, 0, 0], 0.0)
    assert gp.dictionary_size == 1  # 2·e1 dependent; residual 1e-8 < ν
    gp.learn_episode([e1 + 0.1 * e2], [0], 0.0)  # residual 0.01 > ν
    assert gp.dictionary_size == 2
    gp.learn_episode([e1], [0], 0.0)
    assert gp.dictionary_size == 2
    gp.learn_episode([e1], [0], 0.0)
    big = GPSarsa(1, 2, nu=0.02)
    big.learn_episode([e1, e1 + 0.1 * e2], [0, 0], 0.0)
    assert big.dictionary_size == 1
    # same belief, different action: a new point
    gp2 = GPSarsa(2, 2)
    gp2.learn_episode([e1, e1], [0, 1], 0.0)
    assert gp2.dictionary_size == 2 and gp2.dictionary_sizes().tolist() == [1, 1]


def test_buffers_grow_beyond_initial_capacity():
    rng = np.random.default_rng(3)
    dim = 80
    gp = GPSarsa(2, dim, flush_every=5)
    ref = DenseReference()
    for _ in range(30):
        B = rng.random(size=(5, dim))
        A = rng.integers(0, 2, size=5).tolist()
        gp.learn_episode(B, A, -5.0)
        ref.episode(B, A, -5.0)
    assert gp.dictionary_size > 64 and gp.dictionary_sizes().max() > 8
    b = rng.random(dim)
    mean, var = gp.q_mean_var(b)
    for a in range(2):
        rm, rv = ref.mean_var(b, a)
        assert mean[a] == pytest.approx(rm, rel=1e-6, abs=1e-6)
        assert var[a] == pytest.approx(rv, rel=1e-5, abs=1e-6)


def chain_episode(gp, n_states, *, explore, max_len=30):
    """Chain MDP: one-hot states 0..n-1, action 1 moves right, 0 moves left; reaching the end
    gives +20, each step −1."""
    s, B, A = 0, [], []
    while len(A) < max_len:
        b = np.zeros(n_states)
        b[s] = 1.0
        a = gp.select(b, explore=explore)
        B.append(b)
        A.append(a)
        s = min(s + 1, n_states - 1) if a == 1 else max(s - 1, 0)
        if s == n_states - 1:
            return B, A, -len(A) + 20.0
    return B, A, -float(len(A))


def test_learns_chain_mdp():
    n = 5
    gp = GPSarsa(2, n, seed=0)
    for _ in range(60):
        gp.learn_episode(*chain_episode(gp, n, explore=True))
    B, A, R = chain_episode(gp, n, explore=False)
    assert A == [1] * (n - 1) and R == 20.0 - (n - 1)
    for s in range(n - 1):
        b = np.zeros(n)
        b[s] = 1.0
        q = gp.q_mean(b)
        assert q[1] > q[0]


def test_select_mask_greedy_ties_and_exploration_determinism():
    gp = GPSarsa(4, 3, seed=5)
    b = np.array([1.0, 0.0, 0.0])
    assert gp.select(b) == 0  # all means 0: lowest index
    assert gp.select(b, [False, False, True, True]) == 2
    gp.learn_episode([b], [3], 10.0)
    assert gp.select(b) == 3
    assert gp.select(b, [True, True, True, False]) == 0
    with pytest.raises(ValueError, match="mask"):
        gp.select(b, [False] * 4)
    with pytest.raises(ValueError, match="mask"):
        gp.select(b, [True] * 3)
    picks1 = [GPSarsa(4, 3, seed=9).select(b, explore=True) for _ in range(3)]
    g2 = GPSarsa(4, 3, seed=9)
    assert picks1[0] == g2.select(b, explore=True)
    g3 = GPSarsa(4, 3, seed=11)
    seq = [g3.select(b, explore=True) for _ in range(200)]
    assert len(set(seq)) == 4  # prior variance > 0 everywhere: all actions explored
    g4 = GPSarsa(4, 3, seed=11, scale=0)
    assert {g4.select(b, explore=True) for _ in range(20)} == {0}


def test_state_roundtrip_is_exact():
    rng = np.random.default_rng(4)
    eps = random_episodes(rng, 30, dim=4, n_actions=3)
    a = GPSarsa(3, 4, seed=1, flush_every=7)
    for B, A, R in eps[:20]:
        a.learn_episode(B, A, R)
    assert a._t > 0  # deferred covariance terms pending: they must be saved too
    arrays, meta = a.get_state()
    b = GPSarsa.from_state(arrays, meta)
    for B, A, R in eps[20:]:
        a.learn_episode(B, A, R)
        b.learn_episode(B, A, R)
    x = rng.random(4)
    assert a.select(x, explore=True) == b.select(x, explore=True)
    sa, sb = a.get_state(), b.get_state()
    for k in sa[0]:
        assert np.array_equal(sa[0][k], sb[0][k]), k
    assert sa[1] == sb[1]


def test_invalid_arguments():
    with pytest.raises(ValueError, match="n_actions"):
        GPSarsa(0, 3)
    with pytest.raises(ValueError, match="sigma"):
        GPSarsa(2, 3, sigma=0)
    gp = GPSarsa(2, 3)
    with pytest.raises(ValueError, match="belief vector"):
        gp.q_mean([1.0, 2.0])
    with pytest.raises(ValueError, match="beliefs"):
        gp.learn_episode(np.zeros((2, 3)), [0], 1.0)
    with pytest.raises(ValueError, match="actions"):
        gp.learn_episode(np.ones((1, 3)), [2], 1.0)
    with pytest.raises(ValueError, match="reward"):
        gp.learn_episode(np.ones((1, 3)), [1], float("nan"))
    assert issubclass(NumericalError, ArithmeticError)


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    dim=st.integers(1, 6),
    n_actions=st.integers(1, 4),
    n_eps=st.integers(1, 12),
    gamma=st.sampled_from([1.0, 0.9]),
    flush_every=st.integers(1, 10),
)
def test_property_matches_dense_reference(seed, dim, n_actions, n_eps, gamma, flush_every):
    rng = np.random.default_rng(seed)
    eps = random_episodes(rng, n_eps, dim=dim, n_actions=n_actions)
    gp = GPSarsa(n_actions, dim, gamma=gamma, flush_every=flush_every)
    ref = DenseReference(gamma=gamma)
    for B, A, R in eps:
        gp.learn_episode(B, A, R)
        ref.episode(B, A, R)
    assert gp.dictionary_size == len(ref.D)
    b = np.abs(rng.normal(size=dim))
    mean, var = gp.q_mean_var(b)
    for a in range(n_actions):
        rm, rv = ref.mean_var(b, a)
        assert mean[a] == pytest.approx(rm, rel=1e-7, abs=1e-7)
        assert var[a] == pytest.approx(rv, rel=1e-6, abs=1e-6)
        assert var[a] >= 0.0


def test_vectorised_values_follow_growth_and_flushes():
    """The padded per-action copies used for decisions stay in sync while the dictionary grows
    (in place and by reallocation) and covariance terms are flushed."""
    rng = np.random.default_rng(7)
    gp = GPSarsa(3, 12, flush_every=4)
    ref = DenseReference()
    for _ in range(40):
        ((B, A, R),) = random_episodes(rng, 1, dim=12, n_actions=3)
        gp.learn_episode(B, A, R)
        ref.episode(B, A, R)
        b = np.abs(rng.normal(size=12))
        mean, var = gp.q_mean_var(b)
        lm, lv = gp._mean_var(b, [0, 1, 2])  # per-action loop
        np.testing.assert_allclose(mean, lm, rtol=1e-9, atol=1e-9)
        np.testing.assert_allclose(var, lv, rtol=1e-9, atol=1e-9)
        for a in range(3):
            rm, rv = ref.mean_var(b, a)
            assert mean[a] == pytest.approx(rm, rel=1e-7, abs=1e-7)
            assert var[a] == pytest.approx(rv, rel=1e-6, abs=1e-6)
    assert gp.dictionary_sizes().max() > 8  # the padded arrays were reallocated at least once
    m, v = gp.q_mean_var(np.ones(12), actions=[2, 0])
    full_m, full_v = gp.q_mean_var(np.ones(12))
    assert list(m) == [full_m[2], full_m[0]] and list(v) == [full_v[2], full_v[0]]
