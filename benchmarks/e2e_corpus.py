"""behavsim's end-to-end model trained on people (CamRest676's train split): training time, loading,
and failures on the test split's human contexts — beside the ratio to a job of familiar size.

    python benchmarks/e2e_corpus.py                      # the default training (target: <= 600 s wall, quiet 2 cores)
    python benchmarks/e2e_corpus.py --out runs/bench-ec  # keep the folders
    python benchmarks/e2e_corpus.py --corpus PATH        # another unified-format corpus

Measures, each printed with the command that produced it:

1. ``behavsim train --policy e2e --corpus C --split train --seed 0 --no-progress -o DIR`` (the
   defaults): wall and CPU time of the command, the machine's load average beside it, and the wall
   ratio to a GP-SARSA training of 1,000 dialogues run in the same process (the baseline of the
   same run: a time measured on a loaded machine says little alone);
2. the last checkpoint loads with ``AutoModelForCausalLM.from_pretrained``;
3. ``behavsim respond --policy e2e:CKPT`` on ``behavsim contexts import C --split test``: how many
   contexts fail (the acceptance check wants at most 1%), and the respond command's wall time;
4. against the human wizard (``behavsim contexts wizard ct.jsonl``): corpus BLEU-4 (NLTK's
   ``corpus_bleu``, uniform weights, no smoothing) of the model's words against the wizard's, both
   delexicalised with the ontology (:func:`policies.e2e._format.delex_words`; a failed context is an
   empty hypothesis; also on the turns where the wizard wrote an act and on those where it wrote
   none), and TMR, DMR, CER on the contexts where the wizard has an act (:func:`behavsim.compare`;
   a failed context is a missing value, counted; an answer of words alone, no act, is counted).

    python benchmarks/e2e_corpus.py --tables WIZARD.jsonl A.jsonl [B.jsonl ...]   # step 4 alone

5. task success in Environment 1 (``user_config="env1"``, 25 turns) over N evaluation dialogues,
   the same users and goals for every policy (:func:`policies.training.play.play_dialogues`; an act
   set is one turn; an answer the environment cannot play ends its dialogue as a failure, counted):

    python benchmarks/e2e_corpus.py --tsr 1000 handcrafted e2e:DIR [e2e:DIR ...]   # step 5 alone
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CORPUS = Path("/work/shared/corpora/camrest676/data.zip")


def _run(cmd: list[str], cwd: Path) -> tuple[float, float, subprocess.CompletedProcess]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if proc.returncode != 0:
        raise SystemExit(f"failed ({proc.returncode}): {' '.join(cmd)}\n{proc.stderr[-2000:]}")
    return wall, cpu, proc


def _gp_seconds() -> float:
    """A GP-SARSA training of 1,000 dialogues in this process (the scale of a familiar job)."""
    from policies.training.train import TrainConfig, run_training

    with tempfile.TemporaryDirectory() as d:
        t0 = time.perf_counter()
        run_training(
            TrainConfig(dialogues=1000, checkpoint_every=1000, eval_dialogues=10), d, workers=1, progress=False
        )
        return time.perf_counter() - t0


def _words(text: str) -> list[str]:
    return re.findall(r"\[[a-z_]+\]|[a-z0-9']+|[^\sa-z0-9]", text)


def figures(wizard: Path, tables: list[Path]) -> None:
    """Step 4: each table against the wizard's (see the module doc), one line each."""
    from nltk.translate.bleu_score import corpus_bleu  # comes with behavsim's BLEU4 score

    from behavsim import ResponseTable, compare
    from policies.e2e._format import delex_words  # benchmark of the format's delexicalisation: its own function
    from policies.simulation.domain import resolve_domain

    domain = resolve_domain(None)
    ref = ResponseTable.load(wizard)
    refs = [[_words(delex_words(p or "", a, domain))] for a, p in zip(ref.acts, ref.prompts)]
    for path in tables:
        t = ResponseTable.load(path)
        hyps = [_words(delex_words(p or "", a, domain)) if p else [] for a, p in zip(t.acts, t.prompts)]
        bleu = corpus_bleu(refs, hyps)
        split = [  # the turns where the wizard wrote an act, and those where it wrote none
            corpus_bleu(
                [r for r, a in zip(refs, ref.acts) if (a is None) == none],
                [h for h, a in zip(hyps, ref.acts) if (a is None) == none],
            )
            for none in (False, True)
        ]
        means = compare([ref, t], [(0, 1)], scores=["TMR", "DMR", "CER"], allow_unanswered=True).means.iloc[0]
        failed = sum(1 for e in t.errors if e)
        acts = sum(1 for a in ref.acts if a is not None)
        # answers of words alone (no act, no error): where the wizard has an act, its act scores do not apply
        alone = [a is None and not e for a, e in zip(t.acts, t.errors)]
        crossed = sum(1 for x, a in zip(alone, ref.acts) if x and a is not None)
        print(
            f"   {t.id}: corpus BLEU-4 (delexicalised) {bleu:.4f} on {len(refs)} turns ({split[0]:.4f} on those with a "
            f"wizard act, {split[1]:.4f} on those without); on the {acts} turns with a "
            f"wizard act: TMR {means['TMR']:.3f}, DMR {means['DMR']:.3f}, CER {means['CER']:.3f} "
            f"(missing {int(means.get('n_missing_TMR', 0))}, words alone {crossed}); failed {failed} of "
            f"{len(t.acts)}; words alone {sum(alone)} (where the wizard has no act: {sum(alone) - crossed} of "
            f"{len(refs) - acts})"
        )


def task_success(dialogues: int, policies: list[str]) -> None:
    """Step 5: each policy's task success in Environment 1, one line each."""
    from policies.training.play import play_dialogues

    for spec in policies:
        t0 = time.perf_counter()
        r = play_dialogues(spec, dialogues, env_options={"user_config": "env1", "max_turns": 25})
        print(
            f"   {r.policy}: TSR {r.tsr:.3f}, mean length {r.adl:.2f} turns over {len(r.success)} dialogues; "
            f"{r.failed_turns} ended at an answer that could not be played"
            + (f" (first: {r.first_failure[:100]})" if r.first_failure else "")
            + f"; {time.perf_counter() - t0:.0f} s"
        )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", type=Path, default=CORPUS, help=f"a unified-format corpus (default {CORPUS})")
    ap.add_argument("--out", type=Path, help="keep the folders here (default: a temporary folder)")
    ap.add_argument("--tables", nargs="+", type=Path, metavar="TABLE", help="step 4 alone: WIZARD TABLE [TABLE ...]")
    ap.add_argument("--tsr", nargs="+", metavar="N_OR_POLICY", help="step 5 alone: N POLICY [POLICY ...]")
    args = ap.parse_args(argv)
    if args.tsr:
        if len(args.tsr) < 2 or not args.tsr[0].isdigit():
            raise SystemExit("--tsr: the number of dialogues, then at least one policy spec")
        print(f"5. task success in Environment 1 over {args.tsr[0]} dialogues")
        task_success(int(args.tsr[0]), args.tsr[1:])
        return 0
    if args.tables:
        if len(args.tables) < 2:
            raise SystemExit("--tables: the wizard's table, then at least one table to compare with it")
        print("4. against the human wizard")
        figures(args.tables[0], args.tables[1:])
        return 0
    work = args.out or Path(tempfile.mkdtemp(prefix="bench-e2e-corpus-"))
    work.mkdir(parents=True, exist_ok=True)
    exe = str(Path(sys.executable).with_name("behavsim"))
    corpus = str(args.corpus.resolve())
    print(f"work folder {work}; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    try:
        _run([exe, "contexts", "import", corpus, "--split", "test", "-o", "ct.jsonl"], work)
        cmd = [exe, "train", "--policy", "e2e", "--corpus", corpus, "--split", "train", "--seed", "0"]
        cmd += ["--no-progress", "-o", "e2e"]
        load = os.getloadavg()[0]
        wall, cpu, proc = _run(cmd, work)
        gp = _gp_seconds()
        print(f"1. {' '.join(cmd[1:])}")
        print(
            f"   wall {wall:.1f} s, CPU {cpu:.1f} s (target <= 600 s wall on a quiet 2-core machine; load "
            f"average {load:.1f} at the start); a GP-SARSA training of 1,000 dialogues here took {gp:.1f} s "
            f"(e2e-corpus/GP wall ratio {wall / gp:.1f})"
        )
        for line in proc.stdout.splitlines():
            if line.startswith(("best on validation", "end-to-end model")):
                print(f"   {line}")
        ckpt = sorted(p.parent for p in (work / "e2e").glob("*/config.json"))[-1]
        from transformers import AutoModelForCausalLM  # optional heavy dependency, loaded only here

        model = AutoModelForCausalLM.from_pretrained(ckpt)
        print(f"2. {ckpt.name} loads with AutoModelForCausalLM.from_pretrained: {type(model).__name__}")
        rcmd = [exe, "respond", "--policy", f"e2e:{ckpt}", "--contexts", "ct.jsonl", "-o", "e2e.jsonl"]
        rwall, _, _ = _run([*rcmd, "--no-progress"], work)
        rows = [json.loads(line) for line in (work / "e2e.jsonl").read_text().splitlines()][1:]
        failed = sum(1 for r in rows if r.get("error"))
        print(f"3. {' '.join(rcmd[1:])}")
        print(
            f"   failed {failed} of {len(rows)} test contexts ({100 * failed / max(1, len(rows)):.1f}%; want <= 1%), "
            f"respond wall {rwall:.1f} s"
        )
        _run([exe, "contexts", "wizard", "ct.jsonl", "-o", "wizard.jsonl"], work)
        print("4. against the human wizard (behavsim contexts wizard ct.jsonl)")
        figures(work / "wizard.jsonl", [work / "e2e.jsonl"])
    finally:
        if args.out is None:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
