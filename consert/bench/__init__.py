"""What a workflow config's DAG costs, job kind by job kind (:mod:`.dag_cost`, ``consert bench --config``), with
what it times on: NLI pairs shaped as SNLI's and MultiNLI's where their files are missing (:mod:`.nli_lengths`) and
a loop's steady rate (:mod:`.steady_rate`). The harness's benchmarks of itself are ``harness_bench/``."""

#: The executions ``--compare`` times each kind in besides its own (``auto``): the step without CUDA graphs or
#: compilation, with its training forward compiled (no graphs), replayed as CUDA graphs where it can be (the
#: objectives that ``auto`` keeps off them until their CUDA test has passed included), and replayed as CUDA graphs
#: with each layer's per-token chain compiled into fused kernels (:mod:`consert.train.fused`). CUDA only but eager.
COMPARED_EXECUTIONS: dict[str, dict[str, str]] = {
    "eager": {"cuda_graphs": "off", "compile": "off"},
    "compiled": {"cuda_graphs": "off", "compile": "on"},
    "graphs": {"cuda_graphs": "on", "compile": "off"},
    "fused": {"cuda_graphs": "on", "compile": "on"},
}


def execution_settings(config, execution: str) -> dict[str, str] | None:
    """The settings that time ``config`` (a TrainConfig or SgOptConfig) in ``execution``; None where it has no
    such execution. A setting the config lacks is off in it (SG-OPT never compiles): an execution applies when
    every setting it turns on exists."""
    settings = COMPARED_EXECUTIONS[execution]
    if any(value != "off" and not hasattr(config, key) for key, value in settings.items()):
        return None
    return {key: value for key, value in settings.items() if hasattr(config, key)}
