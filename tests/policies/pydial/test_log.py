"""A toolkit's own log messages go to its log file, not the terminal (policies.pydial._log);
against the real PyDial: its HDCPolicy warning while `behavsim respond` loads a handcrafted policy."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

from policies.pydial._log import toolkit_log_path, toolkit_logging

REPO = Path(__file__).resolve().parents[3]


def test_records_go_to_the_log_file_not_the_terminal(tmp_path, monkeypatch, capfd):
    monkeypatch.setenv("BEHAVSIM_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("BEHAVSIM_TOOLKIT_LOG", raising=False)
    path = tmp_path / "cache" / "logs" / "kit.log"
    assert toolkit_log_path("kit") == path
    root = logging.getLogger()
    before = list(root.handlers)
    with toolkit_logging("kit", "kit:a.cfg") as got:
        assert got == path and not path.exists()  # nothing written before a record
        logging.getLogger("").warning("HDCPolicy.py <__init__>82 :  Policy file is given: ,\n but ignored")
        with toolkit_logging("kit", "inner"):  # nested: one handler, one line per record
            logging.getLogger("some.module").error("second")
    assert root.handlers == before
    out, err = capfd.readouterr()
    assert out == "" and err == ""
    lines = path.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 2
    assert lines[0].endswith(
        f"WARNING HDCPolicy.py <__init__>82 : Policy file is given: , but ignored [kit:a.cfg; pid {os.getpid()}]"
    )
    assert lines[1].endswith(f"ERROR second [kit:a.cfg; pid {os.getpid()}]")
    logging.getLogger("").warning("after the block")  # no longer ours
    assert "after the block" not in path.read_text(encoding="utf-8")


def test_an_unwritable_log_loses_the_message_not_the_command(tmp_path, monkeypatch, capfd):
    (tmp_path / "afile").write_text("")
    monkeypatch.setenv("BEHAVSIM_TOOLKIT_LOG", str(tmp_path / "afile" / "kit.log"))
    with toolkit_logging("kit", "x"):
        logging.getLogger("").warning("lost")
    assert capfd.readouterr().err == ""


def test_pydials_warning_goes_to_the_log(tmp_path, pydial_root):
    """`behavsim respond` with PyDial's handcrafted policy: PyDial warns that the config's policy
    file is ignored; the warning is in the log file, the terminal has behavsim's lines only."""
    log = tmp_path / "pydial.log"
    env = {**os.environ, "PYTHONPATH": str(REPO), "BEHAVSIM_TOOLKIT_LOG": str(log)}
    env.pop("PYDIAL_ROOT", None)
    code = "import sys; from behavsim.cli import main; sys.exit(main())"
    r = subprocess.run(
        [
            sys.executable,
            "-c",
            code,
            "contexts",
            "generate",
            "--domain",
            "camrestaurants",
            "--step",
            "0.5",
            "-o",
            "g.jsonl",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr
    r = subprocess.run(
        [sys.executable, "-c", code, "respond", "--policy", f"pydial:{pydial_root}/env1-configs/adapter-hdc.cfg:nlg=off",
         "--pydial-root", str(pydial_root), "--contexts", "g.jsonl", "-o", "hdc.jsonl", "--no-progress"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert "HDCPolicy" not in r.stderr + r.stdout and r.stderr == "", r.stderr
    text = log.read_text(encoding="utf-8")
    assert "WARNING HDCPolicy.py <__init__>82 : Policy file is given" in text
    # the config named as given, or resolved (a shared folder reached through a symbolic link)
    names = {root / "env1-configs" / "adapter-hdc.cfg" for root in (pydial_root, pydial_root.resolve())}
    assert any(f"[pydial:{name}; pid " in text for name in names), text
