# Models of yours (the config's `yours:`): each evaluated under the paper's protocol, a row of its own in the tables it
# names, and its paired difference from each ConSERT row of those tables (consert/paper/yours.py). No verdict.


rule evaluate_yours:
    """A model of yours on the 7 sets' test splits, with the pooling its entry names (auto: its own
    sentence-transformers modules, else mean), the pairs' bootstrap replicates kept beside the CSV."""
    input:
        senteval=DATA,
        encoding=ENCODING_CONFIG,
        hub=lambda wc: hub_inputs(YOURS[wc.name].model),
        folder=lambda wc: your_folder(wc.name),
    output:
        your_eval("{name}"),
    log:
        "logs/yours/{name}.log",
    benchmark:
        paths.benchmark(your_eval("{name}"))
    wildcard_constraints:
        name=runs_in(YOURS),
    params:
        model=lambda wc: YOURS[wc.name].model,
        pooling=lambda wc: YOURS[wc.name].pooling,
    threads: THREADS
    resources:
        gpu=GPU_PER_JOB,
    conda:
        "../envs/consert.yaml"
    shell:
        consert_shell("evaluate {params.model:q} --pooling {params.pooling:q} --format csv", gpu_job=True)


rule yours_paired:
    """Each model of yours against each ConSERT row of its tables: the difference of Avg on the same test pairs, with
    its paired bootstrap interval (comparison.csv's rows of yours)."""
    input:
        paired_inputs(CONFIG),
    output:
        YOURS_PAIRED,
    log:
        "logs/yours/paired.log",
    params:
        config=config_showing("yours"),
    conda:
        "../envs/consert.yaml"
    script:
        "../scripts/yours_paired.py"
