localrules:
    run_config,  # files written from the config: never worth a cluster job
    resolved_config,


rule run_config:
    """A training run's resolved config, every key (the authors' defaults filled in): what `consert train` or
    `consert sgopt` trains with. A reviewer diffs two runs' files to see what differs. Rendered by a template
    engine, inside the snakemake process: a `run:` job would start a snakemake process of its own (seconds
    each, for a hundred runs)."""
    input:
        template=RUN_CONFIG_TEMPLATE,
    output:
        paths.train_yaml("{run}"),
    log:
        "logs/configs/{run}.log",
    params:
        text=run_config_yaml,
    template_engine:
        "jinja2"


rule resolved_config:
    """A settings file resolved from the config, read by the jobs of one kind: the encoding every job that
    encodes or reads a vector cache shares; BERT-flow's settings (the authors', with baselines.flow over them);
    what the comparison and the gate decide with besides decision.yaml (the config's overrides of its margins and
    seed SDs, the seeds its design gives each trained row, the rows it does not run, the gate's policy). Rendered
    as run_config is."""
    input:
        template=RUN_CONFIG_TEMPLATE,
    output:
        "results/{name}_config.yaml",
    wildcard_constraints:
        name="|".join(RESOLVED_CONFIGS),
    log:
        "logs/configs/{name}.log",
    params:
        text=lambda wc: RESOLVED_CONFIGS[wc.name](),
    template_engine:
        "jinja2"
