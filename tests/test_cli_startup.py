"""Start-up of the command line: a command loads its own module, and ``--help`` loads none.

The speed itself is measured by ``benchmarks/startup.py`` (not a timed
test); these tests check the structure that makes it fast, in fresh
processes: which modules a command imports.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from commsim.cli import COMMANDS, _load, main

ROOT = Path(__file__).resolve().parent.parent
COMMAND_MODULES = {target.partition(":")[0] for target, _ in COMMANDS.values()}

PROBE = """
import json, sys
from commsim.cli import main
sys.argv = ["commsim", *json.loads(sys.argv[1])]
try:
    main()
except SystemExit as exc:
    if exc.code:
        raise
sys.stdout.flush()
print("\\nMODULES " + json.dumps(sorted(sys.modules)))
"""


def fresh(*args: str) -> tuple[str, set[str]]:
    """``(stdout, modules imported)`` of ``commsim ARGS`` in a fresh interpreter."""
    env = {**os.environ, "COLUMNS": "200"}
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(args)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr
    text, _, modules = proc.stdout.rpartition("\nMODULES ")
    return text, set(json.loads(modules))


@pytest.mark.parametrize("name", list(COMMANDS))
def test_listed_help_line_is_the_commands_own(name: str) -> None:
    """``commsim --help`` lists each command with the first line of the help the command itself shows."""
    command = _load(name)
    assert command.name == name
    assert (command.help or "").strip().splitlines()[0] == COMMANDS[name][1]


def test_help_lists_every_command_and_imports_none() -> None:
    """The top-level help names every command with its help line, from the table alone."""
    text, modules = fresh("--help")
    for name, (_, help_line) in COMMANDS.items():
        assert any(line.split()[1:2] == [name] and help_line[:60] in line for line in text.splitlines()), name
    assert not modules & COMMAND_MODULES


def test_run_imports_only_what_it_runs() -> None:
    """An 8-GPU ring run loads its command's module, its algorithm's module, and no other.

    Not loaded: the other commands' modules, the other algorithm families,
    the NCCL plugin (so the entry points were not read), the scenario schema
    (``commsim.config``), plotting and graph libraries; the machine classes
    and the cluster builder (a ``ring`` is built); the file reader (PyYAML);
    ``numpy.ma`` (``np.unique`` imports it on first use; the verifier does
    not call it); rich's emoji table (the consoles read no emoji codes).
    """
    text, modules = fresh("run", "--topology", "ring", "--gpus", "8", "--algorithm", "ring", "--size", "1G")
    assert "all_reduce on ring_8" in text and "1 GiB" in text
    assert modules & COMMAND_MODULES == {"commsim.cli.run"}
    families = {m for m in modules if m.startswith("commsim.algorithms.")}
    assert families - {"commsim.algorithms.base", "commsim.algorithms.registry"} == {
        "commsim.algorithms.ring"
    }
    assert not modules & {"commsim.nccl", "commsim.config", "matplotlib", "networkx", "scipy"}
    assert not modules & {"commsim.topology.machines", "commsim.topology.cluster", "yaml"}
    assert not modules & {"numpy.ma", "rich._emoji_codes"}


def test_a_shipped_machine_is_read_without_the_file_schema() -> None:
    """``--topology dgx1_v100`` reads the shipped YAML plainly: no pydantic file schema, no line tracking."""
    text, modules = fresh("run", "--topology", "dgx1_v100", "--algorithm", "ring", "--size", "1G")
    assert "all_reduce on dgx1_v100" in text
    assert "yaml" in modules
    assert not modules & {"commsim.topology.schema", "commsim.topology.io", "commsim.yamlio"}


def test_builders_list_every_machine_class_in_order() -> None:
    """The builder table names the builders of other modules without importing them; it lists them all.

    The order is the one ``commsim topologies`` shows: the teaching graphs,
    ``cluster``, then :data:`commsim.topology.machines.MACHINES` in its order.
    """
    from commsim.topology.builders import BUILDERS, cluster, fully_connected, ring
    from commsim.topology.machines import MACHINES

    assert list(BUILDERS) == ["ring", "fully_connected", "cluster", *MACHINES]
    assert len(BUILDERS) == len(MACHINES) + 3
    assert dict(BUILDERS) == {
        "ring": ring,
        "fully_connected": fully_connected,
        "cluster": cluster,
        **MACHINES,
    }
    assert "no_such_box" not in BUILDERS
    with pytest.raises(KeyError):
        BUILDERS["no_such_box"]


def test_emoji_codes_in_a_label_are_printed_as_typed(tmp_path: Path) -> None:
    """A label with an emoji code (``:x:`` is rich's cross mark) reaches the table as typed."""
    scenario = tmp_path / "s.yaml"
    scenario.write_text(
        "name: s\ntopology: pcie_4gpu_switch\ncollective: all_reduce\nsizes: [1 MB]\n"
        "algorithms:\n  - {algorithm: ring, label: 'ring :x: one'}\n"
    )
    text, _ = fresh("run", str(scenario))
    assert "ring :x: one" in text
    assert "\u274c" not in text


def test_a_misspelt_command_is_refused_with_the_nearest_name(capsys: pytest.CaptureFixture[str]) -> None:
    """click's "did you mean" still sees every command before any is loaded."""
    old = sys.argv
    sys.argv = ["commsim", "rnu"]
    try:
        with pytest.raises(SystemExit) as info:
            main()
    finally:
        sys.argv = old
    assert info.value.code == 2
    assert "Did you mean 'run'?" in capsys.readouterr().err


def end_of(env: dict[str, str]) -> list[str]:
    """The last two lines of a fresh ``commsim run`` (4-GPU ring): what the process ends with.

    They come from exit handlers registered before ``main``, which run after
    ``main``'s own (last in, first out).
    """
    probe = (
        "import atexit, gc, os, sys\n"
        "atexit.register(lambda: print('FROZEN', gc.get_freeze_count() > 0))\n"
        "atexit.register(lambda: print('BLAS', os.environ.get('OPENBLAS_NUM_THREADS')))\n"
        "from commsim.cli import main\n"
        "sys.argv = ['commsim', 'run', '--topology', 'ring', '--gpus', '4', '--algorithm', 'ring',"
        " '--size', '1M']\n"
        "main()\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT, timeout=120, env=env
    )
    assert proc.returncode == 0, proc.stderr
    assert "all_reduce on ring_4" in proc.stdout
    return proc.stdout.rstrip().splitlines()[-2:]


def test_objects_are_frozen_at_exit_after_the_output() -> None:
    """A finished command leaves its objects out of the interpreter's last collections.

    :func:`gc.freeze`, after the whole table was printed.
    """
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    assert end_of(env)[1] == "FROZEN True"


@pytest.mark.parametrize(("given", "used"), [(None, "1"), ("2", "2")])
def test_numpy_starts_one_blas_thread_unless_told(given: str | None, used: str) -> None:
    """The command sets ``OPENBLAS_NUM_THREADS=1`` before numpy is imported; a user's value stays."""
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    if given is not None:
        env["OPENBLAS_NUM_THREADS"] = given
    assert end_of(env)[0] == f"BLAS {used}"


@pytest.mark.parametrize("module", ["commsim", "commsim.cli"])
def test_python_dash_m_runs_the_command(module: str) -> None:
    """``python -m commsim`` is the ``commsim`` command, as ``python -m commsim.cli`` is.

    Users without the console script on ``PATH`` (a ``pip install --user``, a
    checkout on ``PYTHONPATH``) reach for the package's own name; it ran nothing
    before ``commsim/__main__.py`` existed ("No module named commsim.__main__").
    A bad option must exit 2 the same way through either.
    """
    ok = subprocess.run(
        [sys.executable, "-m", module, "gpus"], capture_output=True, text=True, cwd=ROOT, timeout=120
    )
    assert ok.returncode == 0, ok.stderr
    assert "H100" in ok.stdout
    bad = subprocess.run(
        [sys.executable, "-m", module, "run", "--gpus", "many"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert bad.returncode == 2
    assert "Traceback" not in bad.stderr
