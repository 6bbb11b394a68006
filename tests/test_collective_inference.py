"""Launch mode from the device list's Pids (commsim.calibrate.parser_common._launch)."""

from __future__ import annotations

from commsim.calibrate.parser import Device
from commsim.calibrate.parser_common import _launch

A100 = "NVIDIA A100-SXM4-80GB"


def test_a_pid_repeated_on_another_host_is_another_process() -> None:
    """Pods on different hosts reuse Pid numbers: a repeat counts only on the same host."""
    two_hosts = [Device(0, "pod-a", 0, A100, pid=71), Device(1, "pod-b", 0, A100, pid=71)]
    assert _launch(two_hosts, {"nThread": 1, "nGpus": 1}) == ("processes", 1)
    one_host = [Device(0, "pod-a", 0, A100, pid=71), Device(1, "pod-a", 1, A100, pid=71)]
    assert _launch(one_host, {}) == ("threads", 1)
