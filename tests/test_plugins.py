"""Loopback test of algorithm plugins found through the ``commsim.algorithms`` entry points.

A temporary ``.dist-info`` folder with an ``entry_points.txt`` is put on
``sys.path`` next to the tiny plugin module in ``tests/plugin_pkg``, so the
real ``importlib.metadata`` discovery path is exercised (as networkx tests
its backends with a loopback plugin).
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from pathlib import Path

import pytest

import commsim.algorithms
from commsim.algorithms import (
    BUILT_IN,
    ENTRY_POINT_GROUP,
    Algorithm,
    Problem,
    algorithm_names,
    get_algorithm,
    registry,
)
from commsim.collectives import Collective
from commsim.engine import replay
from commsim.errors import AlgorithmError
from commsim.topology import fully_connected

PLUGIN_DIR = Path(__file__).parent / "plugin_pkg"

Install = Callable[[dict[str, str]], None]


@pytest.fixture
def install_plugins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Install:
    """Install entry points ``{name: "module:attr"}`` and forget which plugins were loaded.

    The registry is a copy for the test, so registered plugins do not leak into
    other tests.
    """
    monkeypatch.syspath_prepend(str(PLUGIN_DIR))
    monkeypatch.setattr(registry, "_REGISTRY", dict(registry._REGISTRY))
    monkeypatch.setattr(registry, "_plugins_loaded", False)

    def install(entries: dict[str, str]) -> None:
        dist = tmp_path / "site" / "commsim_test_plugin-0.1.dist-info"
        dist.mkdir(parents=True)
        (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: commsim-test-plugin\nVersion: 0.1\n")
        lines = [f"[{ENTRY_POINT_GROUP}]"] + [f"{name} = {target}" for name, target in entries.items()]
        (dist / "entry_points.txt").write_text("\n".join(lines) + "\n")
        monkeypatch.syspath_prepend(str(tmp_path / "site"))

    return install


def test_plugin_is_found_and_runs(install_plugins: Install) -> None:
    """The plugin's class is returned by name, plans a valid schedule, and replays exactly."""
    install_plugins({"test_plugin_direct": "commsim_test_plugin:DirectAllReduce"})
    cls = get_algorithm("test_plugin_direct")
    assert issubclass(cls, Algorithm)
    assert cls.__module__ == "commsim_test_plugin"
    assert "test_plugin_direct" in algorithm_names()
    topology = fully_connected(4, bandwidth=1e10, latency=0.0)
    problem = Problem(topology, tuple(topology.gpus), Collective.ALL_REDUCE, 4e8)
    schedule = cls().plan(problem)
    schedule.verify(check_races=True)
    # each directed link carries g/N = 100 MB per phase at 10 GB/s: 10 ms + 10 ms
    assert replay(schedule, topology).makespan_s == pytest.approx(0.020, rel=1e-9)


def test_unnamed_plugin_takes_its_entry_point_name(
    install_plugins: Install, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A plugin class without ``name`` is registered under its entry point's name."""
    install_plugins({"test_plugin_unnamed": "commsim_test_plugin:Unnamed"})
    import commsim_test_plugin  # type: ignore[import-not-found]

    monkeypatch.setattr(commsim_test_plugin.Unnamed, "name", "")  # the registry names the class
    cls = get_algorithm("test_plugin_unnamed")
    assert cls is commsim_test_plugin.Unnamed
    assert cls.name == "test_plugin_unnamed"


def test_plugins_do_not_leak(install_plugins: Install) -> None:
    """Without the dist-info, the plugin name is unknown (the fixture isolates the registry)."""
    install_plugins({})
    assert "test_plugin_direct" not in algorithm_names()
    assert "ring" in algorithm_names()


@pytest.mark.parametrize(
    ("target", "message"),
    [
        (
            "commsim_no_such_module:Thing",
            "algorithm plugin 'broken' (commsim_no_such_module:Thing) failed to load: "
            "No module named 'commsim_no_such_module'",
        ),
        (
            "commsim_test_plugin:NoSuchClass",
            "algorithm plugin 'broken' (commsim_test_plugin:NoSuchClass) failed to load: ",
        ),
        (
            "commsim_test_plugin:NOT_AN_ALGORITHM",
            "algorithm plugin 'broken' (commsim_test_plugin:NOT_AN_ALGORITHM) is not an Algorithm subclass",
        ),
    ],
)
def test_broken_plugin_is_an_algorithm_error(install_plugins: Install, target: str, message: str) -> None:
    """A plugin that cannot be loaded gives an AlgorithmError naming the entry point.

    It is reported by every lookup whose answer could depend on it: listing
    the names, and any name that is not built in (here another plugin's,
    ``nccl``'s, and a misspelt one). A built-in name imports only its own
    module and does not read the entry points (start-up time): its answer
    cannot depend on a plugin, which may not take a built-in name
    (``test_plugin_cannot_take_a_built_in_name``).
    """
    install_plugins({"broken": target, "test_plugin_direct": "commsim_test_plugin:DirectAllReduce"})
    with pytest.raises(AlgorithmError) as info:
        algorithm_names()
    assert str(info.value).startswith(message)
    for name in ("test_plugin_direct", "nccl", "rnig"):  # every lookup, not only the first
        with pytest.raises(AlgorithmError) as info:
            get_algorithm(name)
        assert str(info.value).startswith(message)
    assert get_algorithm("ring").__qualname__ == "Ring"


def test_plugin_cannot_take_a_built_in_name(install_plugins: Install) -> None:
    """A plugin registering under a taken name is refused, naming the owner."""
    install_plugins({"impostor": "commsim_test_plugin:Impostor"})
    with pytest.raises(AlgorithmError, match="algorithm name 'ring' is taken by Ring"):
        algorithm_names()


def test_every_built_in_algorithm_is_listed_for_lazy_import() -> None:
    """``BUILT_IN`` names exactly the named Algorithm classes defined in ``commsim/algorithms/``.

    A family added without its line there could not be found by name (its
    module is imported only through that table).
    """
    defined = {}
    for info in pkgutil.iter_modules(commsim.algorithms.__path__):
        module = importlib.import_module(f"commsim.algorithms.{info.name}")
        for value in vars(module).values():
            own = isinstance(value, type) and value.__module__ == module.__name__
            if own and issubclass(value, Algorithm) and value.name:
                defined[value.name] = f"{module.__name__}:{value.__qualname__}"
    assert defined == BUILT_IN
