rule consert_train:
    """One ConSERT run (any setting, any sweep point), then its evaluation on the 7 sets."""
    input:
        stage1_model,
    output:
        model=directory(paper.run_model("{run}")),
        evaluation=paper.consert_eval("{run}"),
    log:
        "logs/consert/{run}.log",
    benchmark:
        "benchmarks/consert/{run}.tsv"
    params:
        dtype=DTYPE,
        flags=run_flags,
    threads: config["threads"]
    resources:
        gpu=1,
    conda:
        "../envs/consert.yaml"
    shell:
        "OMP_NUM_THREADS={threads} consert train {params.flags} --set output_dir={output.model} "
        "--evaluate {output.evaluation} --eval-dtype {params.dtype} > {log} 2>&1"
