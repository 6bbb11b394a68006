"""Settings of a run: peer-to-peer, the transport between GPUs of a host, NCCL version and forced choices.

Each comes from an option, else from what the log printed (NCCL INFO lines,
environment dumps, command lines: see :mod:`commsim.calibrate.settings`),
else from a stated default that the report marks as assumed. The network
between hosts is :mod:`~commsim.calibrate.infer_network`, its NICs per host
:mod:`~commsim.calibrate.infer_nics`.
"""

from __future__ import annotations

from commsim.calibrate.evidence import Evidence, Fact
from commsim.calibrate.infer_collnet import (
    COLLNET_ONLY,
    COLLNET_OPTION,
    collnet_algo_ignored,
    infer_collnet,
)  # re-exported
from commsim.calibrate.infer_layout import InferenceError, given
from commsim.calibrate.settings import RunSettings, p2p_disabled, setting, setting_value, shm_disabled
from commsim.hardware import GpuSpec
from commsim.nccl.candidates import P2P_COLLECTIVES
from commsim.nccl.tuning_table import parse_version, release_problem, version_note

__all__ = [
    "ALGO_NAMES",
    "COLLNET_OPTION",
    "PROTO_NAMES",
    "SEND_RECV_COLLECTIVES",
    "forced_choices",
    "infer_collnet",
    "infer_host_transport",
    "infer_p2p",
    "infer_version",
]


def infer_host_transport(settings: RunSettings, p2p: Fact, per_node: int) -> Fact | None:
    """NCCL's transport between GPUs of a host when it is one the model does not price, else None.

    NCCL tries its transports in order, P2P, SHM, NET, for each pair of ranks (``src/transport.cc``);
    ``NCCL_SHM_DISABLE=1`` makes SHM refuse (``src/transport/shm.cc``), so two GPUs of a host without
    peer-to-peer are joined by the network transport: the NIC's loopback (IB verbs) or sockets,
    which the model does not price (it prices such pairs through host memory, SHM). With
    peer-to-peer only assumed on, which transport ran is unknown; known on, SHM is not used anyway.
    """
    shm = shm_disabled(settings)
    if shm is None or per_node < 2 or (p2p.value and not p2p.assumed):
        return None
    why = (
        "NCCL_SHM_DISABLE=1: without GPU peer-to-peer NCCL joins the GPUs of a host over its network "
        "transport (the NIC's loopback or sockets), which the model does not price"
    )
    if p2p.value:
        value = "P2P if peer-to-peer works, else the network transport (not modelled)"
        return Fact("host_transport", value, (shm,), assumed=True, option="--p2p/--no-p2p", note=why)
    value = "the network transport (not modelled: priced as through host memory)"
    return Fact("host_transport", value, (shm, *p2p.evidence[:1]), note=why)


def infer_p2p(
    settings: RunSettings,
    option: bool | None,
    raw: str,
    spec: GpuSpec | None,
    has_fabric: bool,
    topology_p2p: bool | None = None,
    topology_option: str = "--topology",
) -> Fact:
    """Whether GPUs of a host reach each other's memory over PCIe (NCCL's P2P transport).

    Order: ``--p2p/--no-p2p``; NCCL's channel lines between GPUs of a host
    (``via P2P/...`` or ``via SHM/...``: what NCCL did); ``NCCL_P2P_DISABLE=1``;
    an ``nvidia-smi topo -p2p`` matrix; ``topology_p2p``, what a topology given
    with ``--topology`` says; an NVLink/xGMI fabric; the catalogue's default.
    """
    from commsim.topology.nvsmi_parse import find_p2p_status

    if option is not None:
        return given("p2p", option, "--p2p/--no-p2p")
    if settings.p2p is not None:
        used = bool(settings.p2p.value)
        how = "its P2P transport" if used else "SHM (through host memory): no peer-to-peer"
        evidence = settings.evidence.get("p2p", (settings.p2p,))
        note = f"NCCL joins GPUs of a host with {how}"
        return Fact("p2p", used, evidence, option="--p2p/--no-p2p", note=note)
    disabled = p2p_disabled(settings)
    if disabled is not None:
        return Fact(
            "p2p", False, (disabled,), option="--p2p/--no-p2p", note="NCCL_P2P_DISABLE=1 forces it off"
        )
    status = find_p2p_status(raw)
    if status is not None:
        return Fact(
            "p2p",
            status,
            (Evidence(status, "nvidia-smi topo -p2p matrix in the log"),),
            option="--p2p/--no-p2p",
        )
    if topology_p2p is not None:
        evidence = (Evidence(topology_p2p, f"the topology given with {topology_option}"),)
        return Fact("p2p", topology_p2p, evidence, option="--p2p/--no-p2p")
    default = bool(spec.p2p_default) if spec is not None else True
    if has_fabric:
        return Fact("p2p", True, (), note="GPUs of a host talk over their NVLink/xGMI fabric")
    name = spec.name if spec is not None else "this GPU"
    note = f"{name} with a stock driver: peer-to-peer {'on' if default else 'off'}"
    return Fact("p2p", default, (), assumed=True, option="--p2p/--no-p2p", note=note)


def infer_version(
    settings: RunSettings, option: str | None, log_version: str | None, source: str | None = None
) -> Fact:
    """The NCCL version the prediction follows.

    Raises
    ------
    InferenceError
        For ``--nccl-version`` that is no NCCL 2 release, and for an NCCL 1 release the log prints
        (``source`` is the log's name, for the message), as for the option: nccl-tests' NCCL 1 runs
        are not modelled (the releases before 2.4 are priced with 2.4's table; NCCL 1 is no NCCL 2).
    """
    if option is not None:
        if problem := release_problem(option):
            raise InferenceError(f"--nccl-version {problem}")
        return given("nccl_version", option, "--nccl-version", version_note(option) or "")
    seen = settings.version
    _refuse_nccl_1(seen or (Evidence(log_version, "NCCL version") if log_version else None), source)
    if seen is not None:
        return Fact(
            "nccl_version",
            str(seen.value),
            (seen,),
            option="--nccl-version",
            note=version_note(str(seen.value)) or "",
        )
    if log_version:
        return Fact(
            "nccl_version",
            log_version,
            (Evidence(log_version, "NCCL version line"),),
            option="--nccl-version",
            note=version_note(log_version) or "",
        )
    return Fact(
        "nccl_version",
        None,
        (),
        assumed=True,
        option="--nccl-version",
        note="the log does not print it; the newest modelled version is used",
    )


def _refuse_nccl_1(printed: Evidence | None, source: str | None) -> None:
    """Refuse the NCCL 1 release a log prints, as ``--nccl-version 1.x`` is (``printed``: the version
    and its line; None when the log prints none)."""
    if printed is None or printed.value is None:
        return
    version = str(printed.value)
    parsed = parse_version(version)
    if parsed is None or parsed[0] >= 2:
        return
    problem = release_problem(version) or f"{version!r} should be an NCCL 2 release"
    raise InferenceError(
        f"{printed.source} {problem}; nccl-tests on NCCL 1 is not modelled: validate a run of NCCL 2, or, "
        "if the run used NCCL 2, give its release with --nccl-version",
        source,
        printed.line,
    )


ALGO_NAMES: dict[str, str] = {
    "ring": "ring",
    "tree": "tree",
    "nvls": "nvls",
    "nvlstree": "nvls_tree",
    "collnetdirect": "collnet_direct",
    "collnetchain": "collnet_chain",
    "collnet": "collnet_direct",
    "pat": "pat",
}
"""NCCL_ALGO names (lower-case, no underscores) to the model's algorithm names."""


PROTO_NAMES: dict[str, str] = {"ll": "LL", "ll128": "LL128", "simple": "Simple"}
"""NCCL_PROTO names (lower-case) to the model's protocol names."""


def _names(value: str, table: dict[str, str], collective: str | None = None) -> tuple[set[str], bool]:
    """Names listed in an NCCL_ALGO / NCCL_PROTO value for ``collective``, and whether the list
    excludes (``^``).

    NCCL 2.24+ takes a list per collective, ``allreduce:tree,ring;allgather:ring`` (vLLM and SGLang
    set such values): the part naming the run's collective applies, else a part naming none; with
    neither, nothing (an empty set) is forced on it. A run whose collective is unknown takes the
    all-reduce part.
    """
    text = value.strip()
    if ";" in text or ":" in text:
        function = (collective or "all_reduce").replace("_", "").lower()
        parts = [part.strip() for part in text.split(";") if part.strip()]
        named = {p.split(":", 1)[0].strip().lower(): p.split(":", 1)[1] for p in parts if ":" in p}
        plain = [p for p in parts if ":" not in p]
        text = named.get(function, plain[0] if plain else "")
    exclude = text.startswith("^")
    names = {table[t.strip().lower()] for t in text.lstrip("^").split(",") if t.strip().lower() in table}
    return names, exclude


SEND_RECV_COLLECTIVES = frozenset(c.value for c in P2P_COLLECTIVES)
"""Collectives NCCL runs as grouped ``ncclSend``/``ncclRecv`` calls: NCCL_ALGO and NCCL_PROTO choose
among the algorithms and protocols of collective operations and do not apply to them."""


def forced_choices(
    settings: RunSettings,
    options_algorithms: tuple[str, ...] | None,
    options_protocols: tuple[str, ...] | None,
    collective: str | None = None,
) -> tuple[dict[str, Fact], tuple[str, ...] | None, tuple[str, ...] | None, list[str]]:
    """Forced algorithms and protocols: options, else NCCL_ALGO / NCCL_PROTO / NCCL_TREE_THRESHOLD / NVLS.

    For a send/receive collective (:data:`SEND_RECV_COLLECTIVES`) the log's settings restrict
    nothing: NCCL's tuner picks among ring, tree, NVLS ... for collective operations only, and
    runs all-to-all, gather, scatter and send/recv as point-to-point sends whatever NCCL_ALGO
    says (a log of ``NCCL_ALGO=Ring ... alltoall_perf`` is a plain all-to-all). The fact still
    lists the setting, with a note saying so; ``--algo`` / ``--proto`` are followed as given.
    """
    facts: dict[str, Fact] = {}
    algorithms, excluded = _forced_algorithms(settings, options_algorithms, facts, collective)
    nvls = setting(settings, "NCCL_NVLS_ENABLE")
    if setting_value(nvls) == "0":
        assert nvls is not None
        excluded |= {"nvls", "nvls_tree"}
        facts["nvls"] = Fact("nvls", False, (nvls,), note="NCCL_NVLS_ENABLE=0")
    protocols = _forced_protocols(settings, options_protocols, facts, collective)
    if collective in SEND_RECV_COLLECTIVES:
        if options_algorithms is None:
            algorithms, excluded = None, set()
            _not_applied(facts, "algorithms", collective)
        if options_protocols is None:
            protocols = None
            _not_applied(facts, "protocols", collective)
    if excluded:
        from commsim.nccl.tuning import ALGORITHMS

        algorithms = tuple(a for a in (algorithms or ALGORITHMS) if a not in excluded)
    return facts, algorithms, protocols, _unmodelled(settings)


def _not_applied(facts: dict[str, Fact], name: str, collective: str) -> None:
    """Say in ``facts[name]`` (a setting the log forces) that it does not apply to ``collective``."""
    fact = facts.get(name)
    if fact is None:
        return
    note = (
        f"{'NCCL_ALGO' if name == 'algorithms' else 'NCCL_PROTO'} does not apply: NCCL runs "
        f"{collective} as point-to-point sends, not as a collective algorithm"
    )
    facts[name] = Fact(name, fact.value, fact.evidence, option=fact.option, note=note)


def _forced_algorithms(
    settings: RunSettings,
    options_algorithms: tuple[str, ...] | None,
    facts: dict[str, Fact],
    collective: str | None = None,
) -> tuple[tuple[str, ...] | None, set[str]]:
    """The algorithms ``--algo``, NCCL_ALGO or NCCL_TREE_THRESHOLD=0 allow and those NCCL_ALGO
    excludes (``^``); the fact saying so goes into ``facts``.

    NCCL ignores an NCCL_ALGO that leaves only CollNet when CollNet failed to set up, and says so
    ('CollNet is not supported or fails to initialize, ignoring NCCL_ALGO=COLLNET'): it re-enables
    ring and tree (``tuning.cc``), so those two are what the run chose from.
    """
    excluded: set[str] = set()
    algorithms = options_algorithms
    if algorithms is not None:
        facts["algorithms"] = given("algorithms", list(algorithms), "--algo")
        return algorithms, excluded
    algo = setting(settings, "NCCL_ALGO")
    threshold = setting(settings, "NCCL_TREE_THRESHOLD")
    if algo is not None:
        names, exclude = _names(str(algo.value), ALGO_NAMES, collective)
        ignored = collnet_algo_ignored(settings) if names and names <= COLLNET_ONLY and not exclude else None
        note = "NCCL_ALGO restricts NCCL's choice"
        if ignored is not None:
            names, note = {"ring", "tree"}, f"NCCL ignored it (line {ignored.line}): ring and tree"
        elif not names:
            note = f"NCCL_ALGO names no algorithm for {collective or 'this collective'}"
        if exclude:
            excluded |= names
        elif names:
            algorithms = tuple(sorted(names))
        facts["algorithms"] = Fact("algorithms", str(algo.value), (algo,), option="--algo", note=note)
    elif setting_value(threshold) == "0":
        assert threshold is not None
        algorithms = ("ring",)
        facts["algorithms"] = Fact(
            "algorithms",
            ["ring"],
            (threshold,),
            option="--algo",
            note="NCCL_TREE_THRESHOLD=0: ring only (NCCL before 2.13)",
        )
    return algorithms, excluded


def _forced_protocols(
    settings: RunSettings,
    options_protocols: tuple[str, ...] | None,
    facts: dict[str, Fact],
    collective: str | None = None,
) -> tuple[str, ...] | None:
    """The protocols ``--proto`` or NCCL_PROTO allow; the fact saying so goes into ``facts``."""
    protocols = options_protocols
    if protocols is not None:
        facts["protocols"] = given("protocols", list(protocols), "--proto")
        return protocols
    proto = setting(settings, "NCCL_PROTO")
    if proto is not None:
        names, exclude = _names(str(proto.value), PROTO_NAMES, collective)
        protocols = tuple(sorted(set(PROTO_NAMES.values()) - names if exclude else names)) or None
        facts["protocols"] = Fact(
            "protocols",
            str(proto.value),
            (proto,),
            option="--proto",
            note="NCCL_PROTO restricts NCCL's choice",
        )
    return protocols


def _unmodelled(settings: RunSettings) -> list[str]:
    """What the log sets that the model follows only in part: NCCL_MIN/MAX_NCHANNELS bound the channel
    count a small ring LL call is cut from (:func:`channel_limits`), not the bandwidth the channels
    reach."""
    out = []
    for name in ("NCCL_MIN_NCHANNELS", "NCCL_MAX_NCHANNELS"):
        seen = setting(settings, name)
        if seen is not None:
            out.append(
                f"the log sets {name}={seen.value} ({seen.describe()}); the model follows it for the "
                "channels a small ring LL call runs, not for the bandwidth more or fewer channels reach"
            )
    return out


def channel_limit_facts(settings: RunSettings) -> dict[str, Fact]:
    """``min_channels`` and ``max_channels`` from the log's ``NCCL_MIN_NCHANNELS`` and
    ``NCCL_MAX_NCHANNELS``, with their lines; none where unset or no positive integer."""
    facts = {}
    for name, which in (("min_channels", "MIN"), ("max_channels", "MAX")):
        evidence = setting(settings, f"NCCL_{which}_NCHANNELS")
        text = setting_value(evidence)
        if evidence is not None and text is not None and text.isdigit() and int(text) > 0:
            note = f"NCCL_{which}_NCHANNELS bounds NCCL's channels"
            facts[name] = Fact(name, int(text), (evidence,), note=note)
    return facts
