localrules:
    paper_table,  # tables and figures from result CSVs: seconds of CPU, not worth a cluster job and its queue
    recipe,
    paper_figure,
    diagnostic_figure,


rule paper_table:
    input:
        lambda wc: catalogue.inputs(TABLES[wc.name], CONFIG),
    output:
        report("results/{name}.csv", caption="../report/tables.rst", category="Tables"),
    log:
        "logs/paper/{name}.log",
    wildcard_constraints:
        name=catalogue.stem_pattern("table"),  # every table of the catalogue (consert.paper.catalogue)
    params:
        artifact=lambda wc: TABLES[wc.name],
        published=PUBLISHED,
        # the config checked and typed at the workflow's start (the script does not check it again), with the models
        # of yours this table shows
        config=lambda wc: config_showing(TABLES[wc.name]),
    conda:
        "../envs/consert.yaml"
    script:
        "../scripts/artifact.py"


rule recipe:
    """The recipe card: every planned training run as it will train (its train.yaml), next to the authors'."""
    input:
        [paths.train_yaml(run_id) for run_id in RUNS],
    output:
        report("results/recipe.csv", caption="../report/recipe.rst", category="Recipe"),
    log:
        "logs/paper/recipe.log",
    params:
        config=config_showing("recipe"),
        tabled_baselines=list(TABLED),  # a baseline added to a table gives the card a row: its name reruns the card
    conda:
        "../envs/consert.yaml"
    script:
        "../scripts/recipe.py"


rule paper_figure:
    input:
        lambda wc: catalogue.inputs(FIGURES[wc.name], CONFIG),
    output:
        table="results/{name}.csv",
        png=report("figures/{name}.png", caption="../report/figures.rst", category="Figures"),
        pdf="figures/{name}.pdf",
    log:
        "logs/paper/{name}.log",
    wildcard_constraints:
        name=catalogue.stem_pattern("figure"),  # every figure of the catalogue: figures/comparison_forest.png is not one
    params:
        artifact=lambda wc: FIGURES[wc.name],
        published=PUBLISHED,
        config=config_showing("figure"),
    conda:
        "../envs/consert.yaml"
    script:
        "../scripts/artifact.py"


use rule paper_figure as diagnostic_figure with:
    input:
        lambda wc: catalogue.inputs(DIAGNOSTIC_FIGURES[wc.name], CONFIG),
    output:
        table="results/{name}.csv",
        png=report("figures/{name}.png", caption="../report/diagnostics.rst", category="Diagnostics"),
        pdf="figures/{name}.pdf",
    wildcard_constraints:
        name=catalogue.stem_pattern("diagnostic"),
    params:
        artifact=lambda wc: DIAGNOSTIC_FIGURES[wc.name],
        config=lambda wc: config_showing(DIAGNOSTIC_FIGURES[wc.name]),
