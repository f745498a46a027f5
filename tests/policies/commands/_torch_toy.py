"""A toy PyTorch trainer of its own, followed by ``behavsim monitor --pattern/--loader`` in the tests.

A small policy network (4 belief features → 5 system acts) learns the rule "request the first
search constraint the user has not settled, else reqmore()"; every ``--every`` steps its
``state_dict`` is saved with ``torch.save`` as ``policy-step<NNNNNN>.pt`` (written under a
temporary name and renamed, as a trainer should). :func:`load_policy` is the monitor's loader:
``torch.load(..., weights_only=True)`` and a greedy ``belief -> act`` function.

Run: ``python _torch_toy.py OUTDIR --steps 600 --every 100 [--pause S]``.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import torch

SLOTS = ("area", "pricerange", "food")
ACTS = ("request(area)", "request(pricerange)", "request(food)", "reqmore()", "hello()")


def make_net() -> torch.nn.Module:
    return torch.nn.Sequential(torch.nn.Linear(4, 16), torch.nn.Tanh(), torch.nn.Linear(16, len(ACTS)))


def features(belief: dict) -> list[float]:
    beliefs = belief["beliefs"]
    return [1.0 - float(beliefs[s].get("**NONE**", 0.0)) for s in SLOTS] + [float(beliefs["method"]["byconstraints"])]


def rule(x: torch.Tensor) -> torch.Tensor:
    """The teacher: index of the first slot with confidence below 0.5, else reqmore()."""
    unsettled = x[:, :3] < 0.5
    first = torch.where(unsettled.any(dim=1), unsettled.float().argmax(dim=1), torch.full((len(x),), 3))
    return first


def train(out: Path, steps: int, every: int, pause: float) -> None:
    torch.manual_seed(0)
    torch.set_num_threads(1)
    net = make_net()
    opt = torch.optim.SGD(net.parameters(), lr=0.05)
    gen = torch.Generator().manual_seed(1)
    out.mkdir(parents=True, exist_ok=True)
    for step in range(1, steps + 1):
        x = torch.rand(32, 4, generator=gen)
        loss = torch.nn.functional.cross_entropy(net(x), rule(x))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % every == 0:
            path = out / f"policy-step{step:06d}.pt"
            tmp = out / f".{path.name}.tmp"
            torch.save(net.state_dict(), tmp)
            os.replace(tmp, path)
            time.sleep(pause)


def load_policy(path: str):
    """The loader for ``--loader``: a checkpoint file → a greedy ``belief -> act`` function."""
    net = make_net()
    net.load_state_dict(torch.load(path, weights_only=True))
    net.eval()

    def act(belief: dict) -> str:
        with torch.no_grad():
            return ACTS[int(net(torch.tensor([features(belief)])).argmax())]

    return act


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--steps", type=int, default=600)
    ap.add_argument("--every", type=int, default=100)
    ap.add_argument("--pause", type=float, default=0.0)
    a = ap.parse_args()
    train(Path(a.out), a.steps, a.every, a.pause)
