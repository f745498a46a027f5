"""Episodic sparse GP-SARSA (Engel, Mannor & Meir 2005; Gašić & Young 2014), as PyDial runs it.

Two layers:

* :class:`GPSarsa` — the learner on plain numbers: a belief vector ``b`` (1-D float array of
  length ``dim``) and an action index ``0 <= a < n_actions``. It knows nothing of dialogue.
* :class:`policies.gp.policy.GPSarsaPolicy` — the learner bound to the restaurant domain: it turns a belief state into
  the summary belief vector (``policies.simulation.features.belief_vector``), masks the summary actions
  (``policies.simulation.actions.action_mask``) and maps the chosen summary action to a master act. It obeys
  the project's policy protocol (``name``, ``act(belief) -> Response``).

The model (identical to PyDial's ``policy/GPLib.py``, independently written):

* kernel ``k((b, a), (b', a')) = (b · b') · δ(a, a')`` — PyDial's ``polysort`` belief kernel (a dot
  product of the already sorted summary vectors) times the delta action kernel;
* Monte-Carlo GP-TD noise model (noise covariance ``σ² H Hᵀ`` per episode), ``γ = 1``, ``σ = 5``;
* sparsification by approximate linear dependence (ALD) with threshold ``ν = 0.001``;
* PyDial's reward convention: every step gets reward 0 except the last (terminal) step, which gets
  the whole return of the dialogue;
* exploration while learning: for every allowed action sample ``Q ~ N(mean, (scale·std)²)``
  (``scale = 3``) and take the largest; evaluation: the largest posterior mean.

Deviations from PyDial, all of them for speed or reproducibility, none changing the model:

1. Per-action bookkeeping. Because of the delta action kernel only points of the same action
   interact, so the inverse Gram matrix is block diagonal: it is kept as one block per action and
   each kernel vector is computed only against the dictionary points of its action.
2. Preallocated, geometrically growing numpy buffers instead of lists of state objects; for
   decisions the per-action blocks are also kept stacked in zero-padded arrays, so the mean and
   variance of all actions take a handful of array operations instead of a loop over actions.
3. Deferred covariance updates. PyDial adds the rank-one term ``c cᵀ / s`` to the dense
   posterior matrix ``C`` after every step (O(m²) each). Here the terms are collected as columns
   of a matrix ``U`` and ``C`` is used as ``C₀ + U diag(1/s) Uᵀ``; ``U`` is folded into ``C₀`` with
   one matrix product every ``flush_every`` steps. Only the rounding of the
   result can differ from PyDial's order of operations. The flush points are fixed by the step
   count and checkpoints store the pending terms, so a run is bit-for-bit reproducible and a
   run resumed from a checkpoint equals an uninterrupted one.
4. A per-object ``np.random.Generator`` (PCG64) for the exploration noise instead of PyDial's
   global ``Settings.random``; all allowed actions draw their noise with one call.
5. Ties between equal values are broken by the lowest action index (PyDial's stable sort does the
   same for the action order it is given).
6. A negative variance (rounding) is clipped to 0, as in PyDial; a non-positive ``s`` (which
   cannot happen in exact arithmetic) raises :class:`NumericalError` instead of producing NaNs.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = [
    "GPSarsa",
    "NumericalError",
    "DEFAULT_HYPERPARAMETERS",
]

#: PyDial's defaults (``[gpsarsa]`` gamma, sigma, nu; ``scale`` 3 while training).
DEFAULT_HYPERPARAMETERS: dict[str, float] = {"gamma": 1.0, "sigma": 5.0, "nu": 0.001, "scale": 3.0}


class NumericalError(ArithmeticError):
    """The GP posterior became numerically invalid (e.g. a non-positive innovation variance)."""


def _grow_1d(arr: np.ndarray, n: int) -> np.ndarray:
    out = np.zeros(n, dtype=arr.dtype)
    out[: arr.shape[0]] = arr
    return out


def _grow_rows(arr: np.ndarray, n: int) -> np.ndarray:
    out = np.zeros((n,) + arr.shape[1:], dtype=arr.dtype)
    out[: arr.shape[0]] = arr
    return out


def _grow_square(arr: np.ndarray, n: int, used: int) -> np.ndarray:
    out = np.zeros((n, n), dtype=arr.dtype)
    out[:used, :used] = arr[:used, :used]
    return out


class _ActionBlock:
    """Dictionary points of one action: belief vectors, global indices, inverse Gram block."""

    __slots__ = ("n", "X", "gidx", "Kinv", "Cd")

    def __init__(self, dim: int, cap: int = 8) -> None:
        self.n = 0
        self.X = np.zeros((cap, dim))
        self.gidx = np.zeros(cap, dtype=np.intp)
        self.Kinv = np.zeros((cap, cap))
        self.Cd = np.zeros((cap, cap))  # diagonal block of the flushed C₀, kept in sync

    def kernel(self, b: np.ndarray) -> np.ndarray:
        return self.X[: self.n] @ b

    def append(self, b: np.ndarray, g: int, a_loc: np.ndarray, delta: float) -> None:
        n = self.n
        if n == self.X.shape[0]:
            cap = 2 * n
            self.X = _grow_rows(self.X, cap)
            self.gidx = _grow_1d(self.gidx, cap)
            self.Kinv = _grow_square(self.Kinv, cap, n)
            self.Cd = _grow_square(self.Cd, cap, n)
        self.X[n] = b
        self.gidx[n] = g
        # partitioned inverse: [[K⁻¹ + a aᵀ/δ, −a/δ], [−aᵀ/δ, 1/δ]]
        if n:
            self.Kinv[:n, :n] += np.outer(a_loc, a_loc / delta)
            self.Kinv[:n, n] = -a_loc / delta
            self.Kinv[n, :n] = -a_loc / delta
        self.Kinv[n, n] = 1.0 / delta
        self.Cd[n, : n + 1] = 0.0
        self.Cd[: n + 1, n] = 0.0
        self.n = n + 1


class GPSarsa:
    """Episodic sparse GP-SARSA learner with kernel ``(b·b')·δ(a,a')``.

    Parameters
    ----------
    n_actions, dim:
        Number of (summary) actions and length of the belief vector.
    gamma, sigma, nu, scale:
        Discount, noise standard deviation, ALD sparsification threshold and exploration scale
        (a value ``<= 0`` makes :meth:`select` greedy even when exploring), PyDial's defaults.
    seed:
        Seed (or ``np.random.Generator``) of the exploration noise.
    flush_every:
        Number of learning steps whose rank-one covariance terms are kept apart before being
        folded into the dense posterior matrix (a speed knob; part of the reproducible state).
    """

    def __init__(
        self,
        n_actions: int,
        dim: int,
        *,
        gamma: float = 1.0,
        sigma: float = 5.0,
        nu: float = 0.001,
        scale: float = 3.0,
        seed: int | np.random.Generator | None = 0,
        flush_every: int = 48,
    ) -> None:
        if int(n_actions) < 1:
            raise ValueError(f"n_actions: expected a positive integer, got {n_actions!r}")
        if int(dim) < 1:
            raise ValueError(f"dim: expected a positive integer, got {dim!r}")
        if not 0.0 <= gamma <= 1.0:
            raise ValueError(f"gamma: expected a value in [0, 1], got {gamma!r}")
        if not sigma > 0.0:
            raise ValueError(f"sigma: expected a positive value, got {sigma!r}")
        if not nu >= 0.0:
            raise ValueError(f"nu: expected a non-negative value, got {nu!r}")
        if int(flush_every) < 1:
            raise ValueError(f"flush_every: expected a positive integer, got {flush_every!r}")
        self.n_actions = int(n_actions)
        self.dim = int(dim)
        self.gamma = float(gamma)
        self.sigma = float(sigma)
        self.nu = float(nu)
        self.scale = float(scale)
        self.flush_every = int(flush_every)
        self.rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
        self._init_buffers(cap=64)
        self.episodes = 0
        self.steps = 0

    # ------------------------------------------------------------------ storage
    def _init_buffers(self, cap: int) -> None:
        self._m = 0
        self._X = np.zeros((cap, self.dim))
        self._act = np.zeros(cap, dtype=np.intp)
        self._alpha = np.zeros(cap)
        self._C0 = np.zeros((cap, cap))
        self._U = np.zeros((cap, self.flush_every))
        self._sinv = np.zeros(self.flush_every)
        self._t = 0
        self._blocks = [_ActionBlock(self.dim) for _ in range(self.n_actions)]
        self._pad: dict[str, Any] | None = None  # padded per-action copies for vectorised decisions, see _padded()

    def _add_point(self, b: np.ndarray, a: int, a_loc: np.ndarray, delta: float) -> int:
        m = self._m
        if m == self._X.shape[0]:
            cap = 2 * m
            self._X = _grow_rows(self._X, cap)
            self._act = _grow_1d(self._act, cap)
            self._alpha = _grow_1d(self._alpha, cap)
            self._C0 = _grow_square(self._C0, cap, m)
            self._U = _grow_rows(self._U, cap)
        self._X[m] = b
        self._act[m] = a
        self._alpha[m] = 0.0
        self._C0[m, : m + 1] = 0.0
        self._C0[: m + 1, m] = 0.0
        self._U[m] = 0.0
        blk = self._blocks[a]
        blk.append(b, m, a_loc, delta)
        self._m = m + 1
        pad = self._pad
        if pad is not None:
            j = blk.n - 1
            if j < pad["P"]:  # room in the padded copies: the new point's Cd row/column is 0 anyway
                pad["X"][a, j] = b
                pad["g"][a, j] = m
            else:
                self._pad = None
        return m

    @property
    def dictionary_size(self) -> int:
        """Number of (belief, action) points in the sparse dictionary."""
        return self._m

    def dictionary_sizes(self) -> np.ndarray:
        """Dictionary points per action."""
        return np.array([blk.n for blk in self._blocks], dtype=np.int64)

    def flush(self) -> None:
        """Fold the deferred rank-one terms into the dense posterior matrix."""
        t, m = self._t, self._m
        if t == 0:
            return
        U = self._U[:m, :t]
        self._C0[:m, :m] += (U * self._sinv[:t]) @ U.T
        for blk in self._blocks:
            if blk.n:
                g = blk.gidx[: blk.n]
                blk.Cd[: blk.n, : blk.n] = self._C0[np.ix_(g, g)]
        self._t = 0
        if self._pad is not None:
            self._pad["Cd"] = None

    def _push_rank_one(self, c: np.ndarray, s: float) -> None:
        m = self._m
        self._U[:m, self._t] = c
        self._sinv[self._t] = 1.0 / s
        self._t += 1
        if self._t == self.flush_every:
            self.flush()

    def _C_times(self, idx: np.ndarray, v: np.ndarray) -> np.ndarray:
        """``C @ w`` for the vector ``w`` that is ``v`` on ``idx`` and 0 elsewhere (length m)."""
        m, t = self._m, self._t
        out = v @ self._C0[idx, :m]  # C₀ is symmetric: rows instead of columns
        if t:
            out += self._U[:m, :t] @ (self._sinv[:t] * (v @ self._U[idx, :t]))
        return out

    # ------------------------------------------------------------------ values
    def _check_belief(self, b: Any) -> np.ndarray:
        b = np.asarray(b, dtype=np.float64)
        if b.shape != (self.dim,):
            raise ValueError(f"belief vector: expected shape ({self.dim},), got {b.shape}")
        return b

    def q_mean(self, b: Any) -> np.ndarray:
        """Posterior mean of Q(b, a) for every action a (shape ``(n_actions,)``)."""
        b = self._check_belief(b)
        m = self._m
        if m == 0:
            return np.zeros(self.n_actions)
        k = self._X[:m] @ b
        return np.bincount(self._act[:m], weights=k * self._alpha[:m], minlength=self.n_actions)

    def q_mean_var(self, b: Any, actions: Sequence[int] | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Posterior mean and variance of Q(b, a) for ``actions`` (default: all)."""
        b = self._check_belief(b)
        mean, var = self._mean_var_all(b)
        if actions is None:
            return mean, var
        idx = np.asarray(actions, dtype=np.intp)
        return mean[idx], var[idx]

    def _padded(self) -> dict[str, Any]:
        """Per-action blocks stacked into zero-padded arrays (actions × P …), P the largest block.

        Rebuilt lazily: the belief vectors and indices when the dictionary grows, the diagonal
        covariance blocks after a flush. Padding rows are zero, so they add nothing."""
        pad = self._pad
        if pad is None:
            P = 8
            while P < max(blk.n for blk in self._blocks):
                P *= 2
            A = self.n_actions
            X3 = np.zeros((A, P, self.dim))
            g3 = np.zeros((A, P), dtype=np.intp)
            for a, blk in enumerate(self._blocks):
                X3[a, : blk.n] = blk.X[: blk.n]
                g3[a, : blk.n] = blk.gidx[: blk.n]
            pad = self._pad = {"P": P, "X": X3, "g": g3, "Cd": None}
        if pad["Cd"] is None:
            P = pad["P"]
            Cd3 = np.zeros((self.n_actions, P, P))
            for a, blk in enumerate(self._blocks):
                Cd3[a, : blk.n, : blk.n] = blk.Cd[: blk.n, : blk.n]
            pad["Cd"] = Cd3
        return pad

    def _mean_var_all(self, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Posterior mean and variance of every action at once (a few array operations)."""
        kxx = float(b @ b)
        if self._m == 0:
            return np.zeros(self.n_actions), np.full(self.n_actions, kxx)
        pad = self._padded()
        g3 = pad["g"]
        k3 = pad["X"] @ b  # (A, P); padding gives exactly 0
        mean = np.einsum("ap,ap->a", k3, self._alpha[g3])
        q = np.einsum("ap,ap->a", np.matmul(pad["Cd"], k3[:, :, None])[:, :, 0], k3)
        t = self._t
        if t:
            p = np.matmul(k3[:, None, :], self._U[g3, :t])[:, 0, :]  # (A, t)
            q += (p * p) @ self._sinv[:t]
        var = kxx - q
        np.maximum(var, 0.0, out=var)
        return mean, var

    def _mean_var(self, b: np.ndarray, acts: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
        kxx = float(b @ b)
        n = len(acts)
        mean = np.zeros(n)
        var = np.full(n, kxx)
        t = self._t
        for j, a in enumerate(acts):
            blk = self._blocks[a]
            na = blk.n
            if na == 0:
                continue
            k = blk.X[:na] @ b
            g = blk.gidx[:na]
            mean[j] = k @ self._alpha[g]
            q = k @ (blk.Cd[:na, :na] @ k)
            if t:
                p = k @ self._U[g, :t]
                q += (p * p) @ self._sinv[:t]
            var[j] = kxx - q
        np.maximum(var, 0.0, out=var)
        return mean, var

    def select(
        self,
        b: Any,
        mask: Any = None,
        *,
        explore: bool = False,
        scale: float | None = None,
        rng: np.random.Generator | None = None,
    ) -> int:
        """Choose an action for belief vector ``b`` among those with ``mask[a]`` true.

        ``explore=False``: the largest posterior mean (deterministic, ties → lowest index).
        ``explore=True``: Thompson-style sampling ``Q ~ N(mean, (scale·std)²)`` per allowed action
        with ``scale`` (default: the learner's) and ``rng`` (default: the learner's generator);
        a scale ``<= 0`` is greedy, as in PyDial.
        """
        scale = self.scale if scale is None else float(scale)
        b = self._check_belief(b)
        if mask is None:
            allowed = np.arange(self.n_actions)
        else:
            mask = np.asarray(mask, dtype=bool)
            if mask.shape != (self.n_actions,):
                raise ValueError(f"mask: expected shape ({self.n_actions},), got {mask.shape}")
            allowed = np.flatnonzero(mask)
            if allowed.size == 0:
                raise ValueError("mask: no action is allowed")
        if explore and scale > 0.0:
            mean, var = self._mean_var_all(b)
            mean, var = mean[allowed], var[allowed]
            value = mean + scale * np.sqrt(var) * (rng or self.rng).standard_normal(allowed.size)
        else:
            value = self.q_mean(b)[allowed]
        return int(allowed[int(np.argmax(value))])

    def greedy_many(self, B: Any, masks: Any) -> tuple[np.ndarray, np.ndarray]:
        """Greedy choices for many belief vectors at once: ``(choices, certain)``, where
        ``choices[r]`` is the allowed action (``masks[r]``) with the largest posterior mean for
        the vector ``B[r]``, ties to the lowest index — what :meth:`select` answers, wherever
        ``certain[r]``; a row that is not certain must be decided by :meth:`select`.

        The kernel is a dot product times a delta on actions, so the means of all rows are one
        product: ``Q = B Wᵀ`` with ``W[a] = Σ_{i: a_i = a} α_i x_i``. Its rounding differs from
        :meth:`q_mean`'s (``Σ_i α_i (x_i·b)``, summed in dictionary order), by at most
        ``γ_N Σ_i |α_i| |x_i|·|b|`` each (``N`` = vector length + dictionary size, ``γ_N ≈ N·2⁻⁵³``:
        the textbook bound of a floating-point dot product, for both orders of summation). A
        row is certain when its choice leads every other allowed action by more than twice the
        sum of both bounds and by more than ``1e-9·max(1, |Q|)``; an action without dictionary
        points has the mean 0 exactly in both (no bound needed); a row with a non-finite value or
        no allowed action is never certain.
        """
        B = np.asarray(B, dtype=np.float64)
        masks = np.asarray(masks, dtype=bool)
        n, A, m = B.shape[0], self.n_actions, self._m
        if B.shape != (n, self.dim) or masks.shape != (n, A):
            raise ValueError(
                f"expected vectors ({n}, {self.dim}) and masks ({n}, {A}), got {B.shape} and {masks.shape}"
            )
        if m:
            X, alpha, act = self._X[:m], self._alpha[:m], self._act[:m]
            onehot = np.zeros((A, m))
            onehot[act, np.arange(m)] = 1.0
            W = np.concatenate(((onehot * alpha) @ X, (onehot * np.abs(alpha)) @ np.abs(X)))
            if n and B.min() >= 0.0:  # belief vectors are: means and bounds in one product
                both = B @ W.T
                Q, bound = both[:, :A], both[:, A:]
            else:
                Q, bound = B @ W[:A].T, np.abs(B) @ W[A:].T
            tol = bound * (4.0 * (self.dim + m + 2) * 2.0**-53)
            tol[:, np.bincount(act, minlength=A) == 0] = 0.0  # exactly 0 in both
        else:
            Q = np.zeros((n, A))
            tol = np.zeros((n, A))
        rows = np.arange(n)
        V = np.where(masks, Q, -np.inf)
        choice = V.argmax(axis=1)
        top, top_tol = V[rows, choice], tol[rows, choice]
        V[rows, choice] = -np.inf  # the other allowed actions
        exact = top_tol == 0.0
        if exact.any():  # both exact: the same order in both, whatever the margin
            V[exact[:, None] & (tol == 0.0)] = -np.inf
        with np.errstate(invalid="ignore", over="ignore"):  # rows without an allowed action: -inf - -inf
            # (rounding is monotone: a computed Q_j - tol_j > Q_a + tol_a holds exactly too)
            lead = top - top_tol > (V + tol).max(axis=1)
            certain = lead & (top - V.max(axis=1) > 1e-9 * np.maximum(1.0, np.abs(top)))
        certain &= masks.any(axis=1) & np.isfinite(Q).all(axis=1) & np.isfinite(tol).all(axis=1)
        return choice, certain

    # ------------------------------------------------------------------ learning
    def learn_episode(self, beliefs: Any, actions: Sequence[int], reward: float) -> None:
        """Update the posterior with one finished episode.

        ``beliefs[t]`` and ``actions[t]`` are the belief vector and the action of turn ``t``;
        ``reward`` is the return of the episode, given (PyDial's convention) to the final,
        terminal transition while all earlier transitions get reward 0.
        """
        B = np.asarray(beliefs, dtype=np.float64)
        T = len(actions)
        if B.ndim != 2 or B.shape != (T, self.dim):
            raise ValueError(f"beliefs: expected shape ({T}, {self.dim}) matching {T} actions, got {B.shape}")
        if T == 0:
            return
        acts = [int(a) for a in actions]
        for a in acts:
            if not 0 <= a < self.n_actions:
                raise ValueError(f"actions: expected indices in [0, {self.n_actions}), got {a}")
        if not math.isfinite(reward):
            raise ValueError(f"reward: expected a finite number, got {reward!r}")
        self._start_episode(B[0], acts[0])
        for i in range(1, T + 1):
            terminal = i == T
            self._step(
                B[i - 1],
                acts[i - 1],
                None if terminal else B[i],
                None if terminal else acts[i],
                float(reward) if terminal else 0.0,
                initial=i == 1,
            )
        self.episodes += 1

    def _start_episode(self, b0: np.ndarray, a0: int) -> None:
        blk = self._blocks[a0]
        na = blk.n
        k0 = blk.X[:na] @ b0
        a_loc = blk.Kinv[:na, :na] @ k0
        delta = float(b0 @ b0) - float(k0 @ a_loc)
        if delta > self.nu:
            self._add_point(b0, a0, a_loc, delta)
            self._a_act, self._a_loc = a0, np.zeros(blk.n)
            self._a_loc[-1] = 1.0
        else:
            self._a_act, self._a_loc = a0, a_loc
        self._c = np.zeros(self._m)
        self._d = 0.0
        self._s = math.inf

    def _step(self, bp, ap, bn, an, r: float, *, initial: bool) -> None:
        gam, sig2 = self.gamma, self.sigma * self.sigma
        m = self._m
        terminal = bn is None
        bp_blk = self._blocks[ap]
        gp = bp_blk.gidx[: bp_blk.n]
        kp = bp_blk.kernel(bp)

        # dk = k(prev) − γ k(new), block sparse: values `dv` on global indices `di`
        if terminal:
            di, dv = gp, kp
            delta_new = 0.0
        else:
            bn_blk = self._blocks[an]
            gn = bn_blk.gidx[: bn_blk.n]
            kn = bn_blk.kernel(bn)
            a_new_loc = bn_blk.Kinv[: bn_blk.n, : bn_blk.n] @ kn
            kxx_n = float(bn @ bn)
            delta_new = kxx_n - float(kn @ a_new_loc)
            if an == ap:
                di, dv = gp, kp - gam * kn
            else:
                di, dv = np.concatenate((gp, gn)), np.concatenate((kp, -gam * kn))

        coef = 0.0 if initial else gam * sig2 / self._s
        d = r + coef * self._d - float(dv @ self._alpha[di])
        Cdk = self._C_times(di, dv)
        dkCdk = float(dv @ Cdk[di])
        c_old = self._c
        # previous "a" vector (projection of the previous point), dense
        a_dense = np.zeros(m)
        a_dense[self._blocks[self._a_act].gidx[: len(self._a_loc)]] = self._a_loc

        if delta_new > self.nu:
            # a·(k_prev − 2γ k_new) + γ² k(x_new, x_new)
            ak = float(self._a_loc @ kp) if self._a_act == ap else 0.0
            if self._a_act == an:
                ak -= 2.0 * gam * float(self._a_loc @ kn)
            dks = ak + gam * gam * kxx_n
            c_new = np.empty(m + 1)
            c_new[:m] = a_dense - Cdk
            if not initial:
                c_new[:m] += coef * c_old
            c_new[m] = -gam
            s_new = (1.0 + gam * gam) * sig2 + dks - dkCdk
            if not initial:
                c_dk = float(c_old[di] @ dv)
                s_new += (2.0 * c_dk - gam * sig2) * gam * sig2 / self._s
            self._add_point(bn, an, a_new_loc, delta_new)
            self._a_act = an
            self._a_loc = np.zeros(self._blocks[an].n)
            self._a_loc[-1] = 1.0
        else:
            h = a_dense
            if not terminal:
                h[gn] -= gam * a_new_loc
            c_new = h - Cdk
            if not initial:
                c_new += coef * c_old
            s_new = (1.0 + (0.0 if terminal else gam * gam)) * sig2
            w = c_new[di] if initial else c_new[di] + coef * c_old[di]
            s_new += float(dv @ w)
            if not initial:
                s_new -= gam * gam * sig2 * sig2 / self._s
            if terminal:
                self._a_act, self._a_loc = ap, np.zeros(0)
            else:
                self._a_act, self._a_loc = an, a_new_loc

        if not (s_new > 0.0 and math.isfinite(s_new)):
            raise NumericalError(f"GP-SARSA: innovation variance s = {s_new!r} is not positive")
        self._s = s_new
        self._d = d
        self._c = c_new
        mm = self._m
        self._alpha[:mm] += c_new * (d / s_new)
        self._push_rank_one(c_new, s_new)
        self.steps += 1

    # ------------------------------------------------------------------ state
    def get_state(self) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        """Arrays and JSON-able metadata describing the learner completely.

        Deferred covariance terms are saved as they are (not flushed), so saving never changes
        the numbers of a run: a run saved and resumed at any episode boundary continues exactly
        as an uninterrupted one.
        """
        m, t = self._m, self._t
        kinv = [blk.Kinv[: blk.n, : blk.n].ravel() for blk in self._blocks]
        arrays = {
            "X": self._X[:m].copy(),
            "actions": self._act[:m].astype(np.int64),
            "alpha": self._alpha[:m].copy(),
            "C": self._C0[:m, :m].copy(),
            "Kinv": np.concatenate(kinv),
            "U": self._U[:m, :t].copy(),
            "sinv": self._sinv[:t].copy(),
        }
        meta = {
            "n_actions": self.n_actions,
            "dim": self.dim,
            "gamma": self.gamma,
            "sigma": self.sigma,
            "nu": self.nu,
            "scale": self.scale,
            "flush_every": self.flush_every,
            "episodes": self.episodes,
            "steps": self.steps,
            "rng_state": self.rng.bit_generator.state,
        }
        return arrays, meta

    @classmethod
    def from_state(cls, arrays: dict[str, np.ndarray], meta: dict[str, Any]) -> "GPSarsa":
        """Inverse of :meth:`get_state`; raises ``ValueError`` on inconsistent input."""
        obj = cls(
            int(meta["n_actions"]),
            int(meta["dim"]),
            gamma=float(meta["gamma"]),
            sigma=float(meta["sigma"]),
            nu=float(meta["nu"]),
            scale=float(meta["scale"]),
            seed=0,
            flush_every=int(meta["flush_every"]),
        )
        rs = meta["rng_state"]
        if rs.get("bit_generator") != type(obj.rng.bit_generator).__name__:
            raise ValueError(f"rng_state: expected a {type(obj.rng.bit_generator).__name__} state")
        obj.rng.bit_generator.state = rs
        obj.episodes = int(meta["episodes"])
        obj.steps = int(meta["steps"])
        X = np.asarray(arrays["X"], dtype=np.float64)
        act = np.asarray(arrays["actions"], dtype=np.intp)
        alpha = np.asarray(arrays["alpha"], dtype=np.float64)
        C = np.asarray(arrays["C"], dtype=np.float64)
        kinv = np.asarray(arrays["Kinv"], dtype=np.float64)
        m = act.shape[0]
        if X.shape != (m, obj.dim) or alpha.shape != (m,) or C.shape != (m, m):
            raise ValueError(f"inconsistent shapes: X {X.shape}, actions {act.shape}, alpha {alpha.shape}, C {C.shape}")
        if m and (act.min() < 0 or act.max() >= obj.n_actions):
            raise ValueError("actions: index out of range")
        counts = np.bincount(act, minlength=obj.n_actions)
        if kinv.shape != (int((counts**2).sum()),):
            raise ValueError(f"Kinv: expected {int((counts**2).sum())} numbers, got {kinv.shape}")
        U = np.asarray(arrays["U"], dtype=np.float64)
        sinv = np.asarray(arrays["sinv"], dtype=np.float64)
        t = sinv.shape[0] if sinv.ndim == 1 else -1
        if U.shape != (m, t) or not 0 <= t < obj.flush_every:
            raise ValueError(f"inconsistent deferred terms: U {U.shape}, sinv {sinv.shape}")
        cap = 64
        while cap < m:
            cap *= 2
        obj._init_buffers(cap)
        obj._U[:m, :t] = U
        obj._sinv[:t] = sinv
        obj._t = t
        obj._m = m
        obj._X[:m] = X
        obj._act[:m] = act
        obj._alpha[:m] = alpha
        obj._C0[:m, :m] = C
        off = 0  # diagonal blocks Cd mirror the flushed C₀
        for a in range(len(obj._blocks)):
            n = int(counts[a])
            bcap = 8
            while bcap < n:
                bcap *= 2
            blk = obj._blocks[a] = _ActionBlock(obj.dim, bcap)
            g = np.flatnonzero(act == a)
            blk.n = n
            blk.X[:n] = X[g]
            blk.gidx[:n] = g
            blk.Kinv[:n, :n] = kinv[off : off + n * n].reshape(n, n)
            blk.Cd[:n, :n] = C[np.ix_(g, g)]
            off += n * n
        return obj
