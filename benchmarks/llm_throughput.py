"""Throughput of a language-model policy against an OpenAI-compatible server on this machine.

Starts ``transformers serve`` on 127.0.0.1 (or uses ``--url``), serving a model folder (``--model``;
default: the tiny chat model the tests build, trained on the spot), and answers the same contexts
through ``openai:MODEL@URL`` at 1, 4 and 16 concurrent requests — with the answer cache off, so
every context is a request — printing contexts per second and the ratio to 1 concurrent request.
The same model answered in this process through ``hf:DIR`` (batch size 1) is timed beside it::

    python benchmarks/llm_throughput.py                       # tiny model, 30 contexts
    python benchmarks/llm_throughput.py --model DIR --dialogues 20
    python benchmarks/llm_throughput.py --model DIR --url http://127.0.0.1:8000/v1   # a server already up

Each measurement asks every context once (``--rounds`` times, the best round kept), all of them
after one warm-up request that loads the model into the server. The server log's request count is
checked against the number of requests the run should have made. PyTorch runs on one thread in
this process and in the server (``OMP_NUM_THREADS=1``), so that both do the same work per answer.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "policies"))  # the tiny model and the server helper of the tests


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", help="a Hugging Face model folder (default: build the tests' tiny chat model)")
    ap.add_argument("--url", help="an OpenAI-compatible base URL already serving --model (default: start one)")
    ap.add_argument("--dialogues", type=int, default=6, help="handcrafted dialogues whose contexts are asked")
    ap.add_argument("--concurrency", type=int, nargs="+", default=[1, 4, 16])
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    warnings.simplefilter("ignore")

    import os

    import torch

    from behavsim import respond

    torch.set_num_threads(1)  # as the server (OMP_NUM_THREADS=1): one thread each, the same work per answer
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; torch on 1 thread here and in the server")
    from contexts import collect

    contexts = collect(["handcrafted"], dialogues=args.dialogues, seed=4242)
    distinct = len({repr(b) for b in contexts.beliefs})
    print(f"{len(contexts)} contexts ({distinct} distinct beliefs) of {args.dialogues} handcrafted dialogues")
    with tempfile.TemporaryDirectory() as tmp:
        model = args.model
        if model is None:
            from _llm_model import build_chat_model

            t0 = time.perf_counter()
            model = str(build_chat_model(Path(tmp) / "chat", contexts))
            print(f"built the tiny chat model in {time.perf_counter() - t0:.1f} s")
        model = str(Path(model).resolve())
        server = None
        url = args.url
        if url is None:
            from _llm_fixtures import Server

            server = Server(Path(tmp) / "serve.log")
            url = server.url
        try:
            respond(f"openai:{model}@{url}:cache=off:seed=999", contexts.select([0]))  # load the model
            requests = _distinct_requests(f"openai:{model}@{url}", contexts)
            print(f"{requests} distinct requests (contexts the model sees alike are asked once)")
            rows = []
            t = _best(args.rounds, lambda r: respond(f"hf:{model}:cache=off:seed={r}", contexts))
            rows.append(("hf:DIR (in process, batch 1)", t))
            for c in args.concurrency:
                n0 = server.requests() if server else None
                spec = f"openai:{model}@{url}:cache=off:concurrency={c}:timeout=600"
                t = _best(args.rounds, lambda r, spec=spec, c=c: respond(f"{spec}:seed={1000 * c + r}", contexts))
                if server is not None:
                    made = server.requests() - n0
                    assert made == args.rounds * requests, (made, args.rounds * requests)
                rows.append((f"openai:MODEL@URL, {c} concurrent", t))
        finally:
            if server is not None:
                server.stop()
    base = next(t for name, t in rows if name.endswith(", 1 concurrent"))
    print(f"{'':34}{'seconds':>9}{'contexts/s':>12}{'vs 1 concurrent':>17}")
    for name, t in rows:
        print(f"{name:34}{t:9.2f}{len(contexts) / t:12.1f}{base / t:16.2f}x")


def _distinct_requests(spec: str, contexts) -> int:
    from behavsim import canonical_copy, load_policy

    a = load_policy(spec)
    return len({a.cache_key(a._messages(canonical_copy(b), m)) for b, m in zip(contexts.beliefs, contexts.metas)})


def _best(rounds: int, run) -> float:
    best = float("inf")
    for r in range(rounds):
        t0 = time.perf_counter()
        run(r)
        best = min(best, time.perf_counter() - t0)
    return best


if __name__ == "__main__":
    main()
