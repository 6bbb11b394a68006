"""commsim: predict and explain the time of collective communication on GPU machines.

The short API::

    import commsim
    r = commsim.simulate(topology="dgx1_v100", algorithm="multi_ring",
                         collective="all_reduce", size="160 MB")
    r.time_s, r.busbw_Bps, r.bottleneck, r.link_utilisation
    commsim.plot_timeline(r, "timeline.png")

    run = commsim.run_file("scenarios/pcie_4gpu_sync_strategies.yaml")
    commsim.explain(commsim.simulate("dgx_a100", "nccl", size="1 GB"))

Everything users and the notebooks need is here: simulating (``simulate``,
``run_file``, ``run_scenario``, ``explain``, ``recommend``), machines
(``Topology``, ``get_topology``, ``load_topology_file``, ``save_topology``,
``load_topo_matrix``), results (``Result``, ``results_table``, ``plot_busbw``,
``plot_timeline``, ``draw_topology``, ...), training (``simulate_step``,
``resnet50``, ``bert_large``, ``gpt2_xl``, ``CollectiveTimer``), measured
logs (``load_nccl_tests``, ``validate``, ``fit``; ``commsim.calibrate`` is their
subpackage) and units
(``parse_size``, ``format_size``, ...). Names are imported on first use, so
``import commsim`` (and starting the CLI) stays cheap.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import Any

__version__ = "0.1.0"

_EXPORTS = {
    # simulating
    "simulate": "commsim.api",
    "run_file": "commsim.api",
    "run_scenario": "commsim.api",
    "explain": "commsim.api",
    "FileRun": "commsim.api",
    "recommend": "commsim.recommend",
    "load_scenario": "commsim.config",
    # machines
    "Topology": "commsim.topology",
    "get_topology": "commsim.topology",
    "load_topology_file": "commsim.topology",
    "save_topology": "commsim.topology",
    "load_topo_matrix": "commsim.topology",
    # results and reports
    "Result": "commsim.results",
    "results_table": "commsim.report",
    "plot_busbw": "commsim.report.plots",
    "plot_timeline": "commsim.report.plots",
    "plot_utilisation_heatmap": "commsim.report.plots",
    "plot_validation": "commsim.report.plots",
    "figure_png": "commsim.report.plots",
    "draw_topology": "commsim.report.draw",
    "write_trace": "commsim.report.trace",
    # algorithms and collectives
    "algorithm_names": "commsim.algorithms",
    "get_algorithm": "commsim.algorithms",
    "Collective": "commsim.collectives",
    # training
    "simulate_step": "commsim.training",
    "resnet50": "commsim.training",
    "bert_large": "commsim.training",
    "gpt2_xl": "commsim.training",
    "load_training_scenario": "commsim.training",
    "run_training_scenario": "commsim.training",
    "CollectiveTimer": "commsim.training",
    "best_steps": "commsim.training",
    # measured logs
    "load_nccl_tests": "commsim.calibrate.parser",
    "validate": "commsim.calibrate.validate:validate_file",
    "fit": "commsim.calibrate.fit:fit",  # ``commsim.calibrate`` is the subpackage
    # units
    "parse_size": "commsim.units",
    "parse_bandwidth": "commsim.units",
    "parse_time": "commsim.units",
    "format_size": "commsim.units",
    "format_bandwidth": "commsim.units",
    "format_time": "commsim.units",
    # errors
    "CommsimError": "commsim.errors",
}

__all__ = ["__version__", *_EXPORTS]


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        from commsim.errors import did_you_mean

        raise AttributeError(
            f"module 'commsim' has no attribute {name!r}{did_you_mean(name, list(_EXPORTS))}"
        )
    module_name, _, attribute = _EXPORTS[name].partition(":")
    value = getattr(importlib.import_module(module_name), attribute or name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)


class _Package(types.ModuleType):
    """The package object: an exported function is not hidden by its submodule of the same name.

    Importing ``commsim.recommend`` (the module) sets the package's attribute
    ``recommend`` to the module, so ``commsim.recommend(...)`` raised "'module'
    object is not callable" once anything had imported it; the function stays.
    """

    def __setattr__(self, name: str, value: Any) -> None:
        if isinstance(value, types.ModuleType) and _EXPORTS.get(name) == value.__name__:
            value = getattr(value, name)
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package
