"""Measuring a real machine with nccl-tests, for calibration: a thin, checked wrapper.

:func:`measure` runs the nccl-tests binaries of a build directory (one per
collective, 8 B to 8 GiB by factors of 2 on ``gpus`` GPUs, with ``-J`` JSON
when the binary offers it), stores one log per collective and the
machine's ``nvidia-smi topo -m`` matrix in an output directory, checks
that every log parses, and returns the commands that calibrate a model
from them (:func:`next_commands`). Whatever is missing (binaries, the
driver, GPUs) is named before anything runs.

nccl-tests: https://github.com/NVIDIA/nccl-tests (``make`` puts the
binaries in ``build/``).
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from commsim.errors import CommsimError, ParseError, UnitError
from commsim.units import parse_size

__all__ = [
    "BINARIES",
    "MeasureError",
    "MeasuredLog",
    "Measurement",
    "find_binaries",
    "measure",
    "nccl_tests_command",
    "next_commands",
    "supports_json",
]

BINARIES = {
    "all_reduce": "all_reduce_perf",
    "all_gather": "all_gather_perf",
    "reduce_scatter": "reduce_scatter_perf",
    "broadcast": "broadcast_perf",
}
"""The nccl-tests binary of each collective measured by default."""

TOPOLOGY_MATRIX = "nvidia-smi-topo.log"
"""File of the saved ``nvidia-smi topo -m`` and ``topo -p2p r`` output (not ``.txt``: no nccl-tests log)."""

_HELP_TIMEOUT_S = 30.0
_NCCL_TESTS_SIZE = re.compile(r"\d+[KMGkmg]?")
"""What nccl-tests' ``parsesize`` reads as our :func:`parse_size` does (its suffixes are binary)."""
_JSON_FLAG = re.compile(r"(^|[\s\[,])-J\b", re.MULTILINE)
_GPU_LINE = re.compile(r"^GPU \d+: (.+?)(?: \(UUID: [^)]*\))?$")
_BUILD_HINT = "build nccl-tests with: git clone https://github.com/NVIDIA/nccl-tests && make -C nccl-tests"


class MeasureError(CommsimError):
    """nccl-tests cannot be run here, or a run failed; the message says what is missing."""


@dataclass(frozen=True)
class MeasuredLog:
    """One nccl-tests run.

    Attributes
    ----------
    collective : str
    command : tuple of str
        The command line run (also the first line of ``log``).
    log : Path
        Its output, ``{collective}_{gpus}gpu.txt``.
    json : Path or None
        Its ``-J`` JSON, when the binary supports ``-J``.
    rows : int
        Result rows in the log (message sizes measured).
    elapsed_s : float
        Wall time of the run, in seconds.
    """

    collective: str
    command: tuple[str, ...]
    log: Path
    json: Path | None
    rows: int
    elapsed_s: float


@dataclass(frozen=True)
class Measurement:
    """What :func:`measure` ran and stored.

    Attributes
    ----------
    output_dir : Path
    gpus : int
    logs : list of MeasuredLog
    topology_matrix : Path or None
        The saved ``nvidia-smi topo -m`` output, followed by ``topo -p2p r``
        where the driver has it (None without nvidia-smi).
    gpu_model : str or None
        The GPU name ``nvidia-smi -L`` lists most (None without nvidia-smi).
    notes : list of str
        What was missing but did not stop the measurement (binaries of some
        collectives, nvidia-smi).
    """

    output_dir: Path
    gpus: int
    logs: list[MeasuredLog]
    topology_matrix: Path | None
    gpu_model: str | None = None
    notes: list[str] = field(default_factory=list)


def _candidates(build_dir: Path, name: str) -> list[Path]:
    folders = [build_dir, build_dir / "build"]
    return [folder / f"{name}{suffix}" for folder in folders for suffix in ("", "_mpi")]


def find_binaries(
    build_dir: str | Path, collectives: Sequence[str] = tuple(BINARIES)
) -> tuple[dict[str, Path], dict[str, list[Path]]]:
    """Find nccl-tests binaries in ``build_dir`` and ``build_dir/build`` (``_mpi`` names too).

    Returns
    -------
    found : dict
        Executable binary by collective.
    missing : dict
        For each collective without one, the paths that were looked at.

    Raises
    ------
    MeasureError
        If ``build_dir`` is no directory, or for a collective without a known binary.
    """
    if not Path(build_dir).is_dir():
        raise MeasureError(f"{build_dir} is not a directory; give the nccl-tests checkout or its build/")
    found: dict[str, Path] = {}
    missing: dict[str, list[Path]] = {}
    for collective in collectives:
        if collective not in BINARIES:
            raise MeasureError(f"no nccl-tests binary known for {collective!r}; valid: {', '.join(BINARIES)}")
        candidates = _candidates(Path(build_dir), BINARIES[collective])
        runnable = [p for p in candidates if p.is_file() and os.access(p, os.X_OK)]
        if runnable:
            found[collective] = runnable[0]
        else:
            missing[collective] = candidates
    return found, missing


def _missing_text(missing: dict[str, list[Path]]) -> list[str]:
    lines = []
    for collective, paths in missing.items():
        blocked = [p for p in paths if p.is_file()]
        why = f" ({blocked[0]} exists but is not executable: chmod +x it)" if blocked else ""
        lines.append(f"{BINARIES[collective]} not found; looked for {', '.join(map(str, paths))}{why}")
    return lines


def supports_json(binary: str | Path) -> bool:
    """Whether the binary's ``--help`` offers ``-J`` (JSON output, nccl-tests 2.14 and later)."""
    try:
        proc = subprocess.run(
            [str(binary), "--help"], capture_output=True, text=True, timeout=_HELP_TIMEOUT_S, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise MeasureError(f"cannot run {binary} --help: {exc}") from None
    return bool(_JSON_FLAG.search(proc.stdout + proc.stderr))


def nccl_tests_command(
    binary: str | Path,
    gpus: int,
    min_bytes: str = "8",
    max_bytes: str = "8G",
    factor: int = 2,
    json_path: str | Path | None = None,
) -> list[str]:
    """The nccl-tests command line: ``BINARY -b 8 -e 8G -f 2 -g GPUS [-J FILE]``.

    Sizes are read by :func:`commsim.units.parse_size` (``8G`` is 8 GiB as in
    nccl-tests, ``1 MB`` is 10**6 bytes) and passed on in nccl-tests' own
    form: as typed when nccl-tests reads it the same way, else in bytes.

    Raises
    ------
    MeasureError
        If a size cannot be read, or the first is larger than the last.
    """
    first, last = nccl_tests_size(min_bytes, "--min-bytes"), nccl_tests_size(max_bytes, "--max-bytes")
    if parse_size(first) > parse_size(last):
        raise MeasureError(f"--min-bytes {min_bytes} is larger than --max-bytes {max_bytes}")
    command = [str(binary), "-b", first, "-e", last, "-f", str(factor), "-g", str(gpus)]
    if json_path is not None:
        command += ["-J", str(json_path)]
    return command


def nccl_tests_size(text: str | int, option: str = "size") -> str:
    """``text`` as nccl-tests' ``-b``/``-e`` read it: ``"8G"`` stays, ``"1 MB"`` becomes ``"1000000"``.

    Raises
    ------
    MeasureError
        Naming ``option`` when ``text`` is not a size.
    """
    try:
        nbytes = parse_size(text)
    except UnitError as exc:
        raise MeasureError(f"{option}: {exc}") from None
    written = str(text).strip()
    return written if _NCCL_TESTS_SIZE.fullmatch(written) else str(nbytes)


def _check_driver(gpus: int, output_dir: Path, notes: list[str]) -> tuple[Path | None, str | None]:
    """Check the GPU count and save the topology matrices: ``(matrix file, GPU model)``.

    Without nvidia-smi, a note and ``(None, None)``.
    """
    nvidia_smi = shutil.which("nvidia-smi")
    if nvidia_smi is None:
        notes.append(
            "nvidia-smi not found on PATH: no NVIDIA driver here (a machine without GPUs?); "
            "the topology matrix is not saved"
        )
        return None, None
    listed = _run_text([nvidia_smi, "-L"])
    names = [line for line in listed.splitlines() if line.startswith("GPU ")]
    if len(names) < gpus:
        raise MeasureError(
            f"--gpus {gpus} but nvidia-smi lists {len(names)} GPU(s)"
            + (": " + "; ".join(names) if names else f" ({listed.strip() or 'no output'})")
        )
    models = [m.group(1) for line in names if (m := _GPU_LINE.match(line.strip()))]
    model = Counter(models).most_common(1)[0][0] if models else None
    text = "$ nvidia-smi topo -m\n" + _run_text([nvidia_smi, "topo", "-m"])
    try:
        text += "\n$ nvidia-smi topo -p2p r\n" + _run_text([nvidia_smi, "topo", "-p2p", "r"])
    except MeasureError:
        notes.append("nvidia-smi topo -p2p r failed; the topology import will assume GPU peer-to-peer")
    matrix = output_dir / TOPOLOGY_MATRIX
    matrix.write_text(text, encoding="utf-8")
    return matrix, model


def _run_text(command: list[str]) -> str:
    try:
        proc = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise MeasureError(f"cannot run {shlex.join(command)}: {exc}") from None
    if proc.returncode != 0:
        first = (proc.stdout + proc.stderr).strip().splitlines()[:1] or ["no output"]
        raise MeasureError(
            f"{shlex.join(command)} failed (exit {proc.returncode}): {first[0]}; "
            "the NVIDIA driver is not working, so no GPU can be measured"
        )
    return proc.stdout


def measure(
    build_dir: str | Path,
    gpus: int,
    output_dir: str | Path,
    *,
    collectives: Sequence[str] | None = None,
    min_bytes: str = "8",
    max_bytes: str = "8G",
    factor: int = 2,
    timeout_s: float | None = None,
    on_start: Callable[[str, list[str]], None] | None = None,
) -> Measurement:
    """Run nccl-tests for each collective and store the logs for calibration.

    Parameters
    ----------
    build_dir : path
        The nccl-tests directory, or its ``build/``.
    gpus : int
        GPUs per run (nccl-tests ``-g``; one process).
    output_dir : path
        Where logs go (created): ``{collective}_{gpus}gpu.txt`` (the command
        line, then nccl-tests' output), ``.json`` beside it with ``-J``, and
        ``nvidia-smi-topo.log``.
    collectives : sequence of str, optional
        Default: all of :data:`BINARIES` whose binary is found.
    min_bytes, max_bytes, factor
        nccl-tests ``-b``, ``-e``, ``-f``: sizes as :func:`commsim.units.parse_size`
        reads them (``8G`` = 8 GiB as in nccl-tests, ``1 MB`` = 10**6 bytes).
    timeout_s : float, optional
        Per run.
    on_start : callable, optional
        ``on_start(collective, command)`` before each run (progress output).

    Returns
    -------
    Measurement

    Raises
    ------
    MeasureError
        When no binary is found (naming every path looked at, and whether
        nvidia-smi exists), the driver fails or lists fewer GPUs than asked
        for, or a run fails or prints no results (its output is kept as
        ``.failed.log``).
    """
    if gpus < 1:
        raise MeasureError(f"--gpus must be at least 1, got {gpus}")
    nccl_tests_command("check", gpus, min_bytes, max_bytes, factor)  # sizes refused before anything runs
    if Path(output_dir).exists() and not Path(output_dir).is_dir():  # review27 U8: not 'File exists'
        raise MeasureError(
            f"--output {output_dir}: is a file; -o names a folder for the logs (made if missing)"
        )
    found, missing = find_binaries(build_dir, collectives or tuple(BINARIES))
    notes = _missing_text(missing)
    if not found:
        driver = "" if shutil.which("nvidia-smi") else "; nvidia-smi not found on PATH either (no GPUs here?)"
        raise MeasureError("no nccl-tests binary found: " + "; ".join(notes) + f"{driver}. {_BUILD_HINT}")
    out = Path(output_dir)
    out.mkdir(parents=True, exist_ok=True)
    matrix, model = _check_driver(gpus, out, notes)
    logs = []
    for collective, binary in found.items():
        stem = out / f"{collective}_{gpus}gpu"
        json_path = stem.with_suffix(".json") if supports_json(binary) else None
        command = nccl_tests_command(binary, gpus, min_bytes, max_bytes, factor, json_path)
        if on_start is not None:
            on_start(collective, command)
        logs.append(_run(collective, command, stem.with_suffix(".txt"), json_path, timeout_s, notes))
    return Measurement(out, gpus, logs, matrix, model, notes)


def _run(
    collective: str,
    command: list[str],
    log: Path,
    json_path: Path | None,
    timeout_s: float | None,
    notes: list[str],
) -> MeasuredLog:
    started = time.perf_counter()
    with log.open("w", encoding="utf-8") as f:
        f.write(shlex.join(command) + "\n")
        f.flush()
        try:
            code = subprocess.run(
                command, stdout=f, stderr=subprocess.STDOUT, timeout=timeout_s, check=False
            ).returncode
        except subprocess.TimeoutExpired:
            code = None
        except OSError as exc:
            raise MeasureError(f"cannot run {command[0]}: {exc}") from None
    elapsed_s = time.perf_counter() - started
    if code != 0:
        raise _failed(command, log, notes, "timed out" if code is None else f"exit code {code}")
    from commsim.calibrate.parser import load_nccl_tests

    try:
        rows = len(load_nccl_tests(log, collective).rows)
    except ParseError as exc:
        raise _failed(command, log, notes, f"its output cannot be read ({exc})") from None
    if json_path is not None and not json_path.exists():
        notes.append(f"{command[0]} offers -J but wrote no {json_path.name}")
        json_path = None
    return MeasuredLog(collective, tuple(command), log, json_path, rows, elapsed_s)


def _failed(command: list[str], log: Path, notes: list[str], why: str) -> MeasureError:
    kept = log.with_suffix(".failed.log")
    log.replace(kept)
    tail = [line for line in kept.read_text(encoding="utf-8", errors="replace").splitlines()[1:] if line]
    driver = [n for n in notes if n.startswith("nvidia-smi")]
    return MeasureError(
        f"{shlex.join(command)} failed: {why}; output kept in {kept}"
        + (": " + " | ".join(tail[-5:]) if tail else " (no output)")
        + (f". {driver[0]}" if driver else "")
    )


def next_commands(measurement: Measurement, calibrated: str = "calibrated.yaml") -> list[str]:
    """The commands that calibrate a model from the measurement's logs."""
    out = measurement.output_dir
    logs = shlex.quote(str(out)) + "/*.txt"
    if measurement.topology_matrix is None:
        return [f"commsim calibrate {logs} -o {calibrated}"]
    topology = out / "topology.yaml"
    model = f" --gpu {shlex.quote(measurement.gpu_model)}" if measurement.gpu_model else ""
    matrix = shlex.quote(str(measurement.topology_matrix))
    return [
        f"commsim topo import {matrix}{model} -o {shlex.quote(str(topology))}",
        f"commsim calibrate {logs} --topology {shlex.quote(str(topology))} -o {calibrated}",
    ]
