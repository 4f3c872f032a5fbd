rule consert_train:
    """One ConSERT run (any setting, any sweep point), then its evaluation on the 7 sets.

    The evaluation's vectors are kept as the run's vector cache: BERT-flow on the NLI runs reuses
    them, and the run that Figures 1 and 4 show also gets the top-k statistics there, so its curve
    and predictions need no encoding pass.
    """
    input:
        stage1_model,
    output:
        model=directory(paper.run_model("{run}")),
        evaluation=paper.consert_eval("{run}"),
        vectors=paper.run_vectors("{run}"),
    log:
        "logs/consert/{run}.log",
    benchmark:
        "benchmarks/consert/{run}.tsv"
    params:
        dtype=DTYPE,
        flags=run_flags,
        topk=lambda wc: topk_flag(paper.run_vectors(wc.run)),
    threads: config["threads"]
    resources:
        gpu=1,
    conda:
        "../envs/consert.yaml"
    shell:
        "OMP_NUM_THREADS={threads} consert train {params.flags} --set output_dir={output.model} "
        "--evaluate {output.evaluation} --eval-dtype {params.dtype} --save-vectors {output.vectors} {params.topk} "
        "> {log} 2>&1"
