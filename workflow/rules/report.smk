localrules:
    comparison,
    published_row,  # the verdicts and the report from result CSVs: seconds of CPU, not worth a cluster job
    check_published,
    claims,
    comparison_forest,
    cost,
    summary,


rule comparison:
    """Every reproduced cell next to its published value (never fails: see check_published)."""
    input:
        tables=COMPARED_TABLES,
        settings=COMPARISON_CONFIG,
        yours=[YOURS_PAIRED] if YOURS else [],
    output:
        comparison=report("results/comparison.csv", caption="../report/comparison.rst", category="Comparison"),
        layout="results/paper_tables.csv",
    log:
        "logs/comparison.log",
    params:
        published=PUBLISHED,
        yours=f"--yours {YOURS_PAIRED}" if YOURS else "",
    conda:
        "../envs/consert.yaml"
    shell:
        harness_command("compare --results results --published {params.published:q} --config {input.settings:q} "
        "{params.yours} --layout {output.layout:q} --output {output.comparison:q} > {log:q} 2>&1")


rule published_row:
    """One published row on its own (`snakemake results/rows/table2/ConSERT-base.csv`): its reproduced row built from
    its own evaluations, every seed, and decided as the comparison decides it, provisional where the other rows did
    not run; only that row's training and evaluation jobs run before it."""
    input:
        evaluations=lambda wc: row_inputs(*ROW_TARGETS[row_target(wc.artifact, wc.row)], CONFIG, Path(PUBLISHED)),
        settings=COMPARISON_CONFIG,
    output:
        "results/rows/{artifact}/{row}.csv",
    log:
        "logs/rows/{artifact}/{row}.log",
    wildcard_constraints:
        artifact=runs_in({artifact for artifact, _ in ROW_TARGETS.values()}),
        row=runs_in({Path(target).stem for target in ROW_TARGETS}),
    params:
        artifact=lambda wc: ROW_TARGETS[row_target(wc.artifact, wc.row)][0],
        row=lambda wc: ROW_TARGETS[row_target(wc.artifact, wc.row)][1],
        published=PUBLISHED,
        config=config_showing("rows"),
    conda:
        "../envs/consert.yaml"
    script:
        "../scripts/row_verdict.py"


rule check_published:
    """Gate for CI (`snakemake check_published`): fails when a comparable primary cell or the shared shift is
    not reproduced, or a published row is missing; exits 3 when no cell of the paper is comparable, unless the
    config's gate allows a stand-in run."""
    input:
        comparison="results/comparison.csv",
        settings=COMPARISON_CONFIG,
    log:
        text="logs/check_published.log",
        table="logs/check_published.csv",
    params:
        published=PUBLISHED,
    conda:
        "../envs/consert.yaml"
    shell:
        harness_command("compare --results results --published {params.published:q} --config {input.settings:q} "
        "--output {log.table:q} --check 2>&1 | tee {log.text:q}")


rule claims:
    """The paper's qualitative claims, checked on whatever ran (verdicts of the stand-in are labelled)."""
    input:
        ARTIFACT_CSVS,
    output:
        report("results/claims.csv", caption="../report/claims.rst", category="Comparison"),
    log:
        "logs/claims.log",
    params:
        published=PUBLISHED,
        config=config_showing("claims"),
    conda:
        "../envs/consert.yaml"
    script:
        "../scripts/claims.py"


rule comparison_forest:
    """Reproduced - published for every compared cell, with its interval; stamped with where and when the
    evaluations behind the cells were computed."""
    input:
        comparison="results/comparison.csv",
        evaluations=COMPARED_EVALUATIONS,
    output:
        png=report("figures/comparison_forest.png", caption="../report/forest.rst", category="Comparison"),
        pdf="figures/comparison_forest.pdf",
    log:
        "logs/comparison_forest.log",
    conda:
        "../envs/consert.yaml"
    script:
        "../scripts/forest.py"


rule cost:
    """Wall time, CPU time and peak memory of every job under each artifact (Snakemake's benchmark files)."""
    input:
        ARTIFACT_CSVS,
    output:
        report("results/cost.csv", caption="../report/cost.rst", category="Summary"),
    log:
        "logs/cost.log",
    params:
        config=config_showing("yours"),  # every job's cost, a model of yours' evaluation under its tables
    conda:
        "../envs/consert.yaml"
    script:
        "../scripts/cost.py"


rule summary:
    """The page a reviewer reads first: verdict counts, claims, the tables rendered, curves, diagnostics, cost."""
    input:
        "results/comparison.csv",
        "results/claims.csv",
        "results/cost.csv",
        "results/diagnostics.csv",
        "figures/comparison_forest.png",
        ARTIFACT_CSVS,
        expand("figures/{name}.png", name=DIAGNOSTIC_FIGURES),
    output:
        report("results/summary.html", caption="../report/summary.rst", category="Summary"),
    log:
        "logs/summary.log",
    conda:
        "../envs/consert.yaml"
    script:
        "../scripts/summary.py"
