rule encode_corpus:
    """Every distinct STS text encoded once with every pooling (and, for the figures' size, the top-k
    statistics): poolings, whitening, flow, the top-k curve and the predictions reuse it."""
    input:
        senteval=DATA,
        encoding=ENCODING_CONFIG,
        hub=lambda wc: hub_inputs(CONFIG.models[wc.size]),  # the rules that read its cache read the model after it
    output:
        paths.vector_cache("{size}"),
    log:
        "logs/baselines/{size}/encode.log",
    benchmark:
        "benchmarks/baselines/{size}/encode.tsv"
    params:
        model=lambda wc: CONFIG.models[wc.size],
        topk_max=lambda wc: topk_max(paths.vector_cache(wc.size)),
    threads: THREADS
    priority: UPSTREAM_PRIORITY  # poolings, whitening, BERT-flow, the top-k curve and the figures read it
    resources:
        gpu=GPU_PER_JOB,
    conda:
        "../envs/consert.yaml"
    shell:
        consert_shell("encode {params.model:q} --topk-max {params.topk_max:q}", gpu_job=True)


rule eval_poolings:
    """BERT without training: every pooling of the config, read from the corpus cache."""
    input:
        senteval=DATA,
        encoding=ENCODING_CONFIG,
        vectors=paths.vector_cache("{size}"),
    output:
        paths.baseline_eval("{size}", "poolings"),
    log:
        "logs/baselines/{size}/poolings.log",
    benchmark:
        "benchmarks/baselines/{size}/poolings.tsv"
    params:
        model=lambda wc: CONFIG.models[wc.size],
    threads: THREADS
    conda:
        "../envs/consert.yaml"
    shell:
        consert_shell("evaluate {params.model:q} --vectors {input.vectors:q}")


rule eval_whitening:
    """BERT-whitening, one kernel per task fitted on that task's scored pairs (the authors')."""
    input:
        senteval=DATA,
        encoding=ENCODING_CONFIG,
        vectors=paths.vector_cache("{size}"),
    output:
        paths.baseline_eval("{size}", "whitening-{pooling}-k{k}"),
    wildcard_constraints:
        k="all|[0-9]+",
    log:
        "logs/baselines/{size}/whitening-{pooling}-k{k}.log",
    benchmark:
        "benchmarks/baselines/{size}/whitening-{pooling}-k{k}.tsv"
    params:
        model=lambda wc: CONFIG.models[wc.size],
        pooling=lambda wc: WHITENING_POOLINGS[wc.pooling],
    threads: THREADS
    conda:
        "../envs/consert.yaml"
    shell:
        consert_shell(
            "baseline whitening --model {params.model:q} --pooling {params.pooling:q} --k {wildcards.k:q} --fit-on task "
            "--vectors {input.vectors:q}"
        )


rule eval_flow:
    """BERT-flow, one flow per task fitted on that task's scored pairs (the authors' "target,
    train+dev+test"), on their first-last pooling."""
    input:
        senteval=DATA,
        encoding=ENCODING_CONFIG,
        vectors=paths.vector_cache("{size}"),
        settings=FLOW_CONFIG,
    output:
        paths.baseline_eval("{size}", "flow"),
    log:
        "logs/baselines/{size}/flow.log",
    benchmark:
        "benchmarks/baselines/{size}/flow.tsv"
    params:
        model=lambda wc: CONFIG.models[wc.size],
        pooling=FLOW_POOLING,
    threads: THREADS
    resources:
        gpu=GPU_PER_JOB,
    conda:
        "../envs/consert.yaml"
    shell:
        consert_shell(
            "baseline flow --model {params.model:q} --pooling {params.pooling:q} --flow-config {input.settings:q} "
            "--fit-on task --vectors {input.vectors:q}",
            gpu_job=True,
        )


use rule eval_flow as eval_flow_nli with:
    input:
        senteval=DATA,
        encoding=ENCODING_CONFIG,
        model=lambda wc: paths.run_model(FLOW_NLI_RUNS[wc.size, int(wc.seed)]),
        vectors=lambda wc: paths.run_vectors(FLOW_NLI_RUNS[wc.size, int(wc.seed)]),
        settings=FLOW_CONFIG,
    output:
        paths.flow_nli_eval("{size}", "{seed}"),
    log:
        "logs/baselines/{size}/flow-nli-seed{seed}.log",
    benchmark:
        "benchmarks/baselines/{size}/flow-nli-seed{seed}.tsv"
    params:
        model=lambda wc, input: input.model,
        pooling=FLOW_POOLING,


rule eval_baseline:
    """A baseline whose record names a table (baselines/__init__.py), on each model's corpus cache, with its settings
    from the config's block under its name."""
    input:
        senteval=DATA,
        encoding=ENCODING_CONFIG,
        vectors=paths.vector_cache("{size}"),
    output:
        paths.baseline_eval("{size}", "{name}"),
    wildcard_constraints:
        name=TABLED_BASELINES,
    log:
        "logs/baselines/{size}/{name}.log",
    benchmark:
        "benchmarks/baselines/{size}/{name}.tsv"
    params:
        model=lambda wc: CONFIG.models[wc.size],
        pooling=PAPER_POOLING,  # ConSERT's, as the recipe card says
        settings=baseline_settings,
    threads: THREADS
    conda:
        "../envs/consert.yaml"
    shell:
        consert_shell(
            "baseline {wildcards.name:q} --model {params.model:q} --pooling {params.pooling:q} --vectors {input.vectors:q} "
            "{params.settings}"
        )


rule eval_glove:
    input:
        senteval=DATA,
        glove=lambda wc: external_inputs(GLOVE_INPUTS),
    output:
        paths.glove_eval(),
    log:
        "logs/baselines/glove.log",
    benchmark:
        paths.benchmark(paths.glove_eval())
    params:
        glove=CONFIG.baselines.glove or "offline",
    conda:
        "../envs/consert.yaml"
    shell:
        consert_shell("baseline glove --glove {params.glove:q}", encoder=False)


rule train_sgopt:
    input:
        senteval=DATA,
        config=paths.train_yaml(paths.sgopt_run("{size}", "{seed}")),
        hub=lambda wc: hub_inputs(CONFIG.models[wc.size]),
    output:
        model=model_output(paths.run_model(paths.sgopt_run("{size}", "{seed}"))),
        evaluation=paths.sgopt_eval("{size}", "{seed}"),
        curve=paths.run_curve(paths.sgopt_run("{size}", "{seed}")),
    log:
        "logs/sgopt/{size}-seed{seed}.log",
    benchmark:
        paths.benchmark(paths.sgopt_eval("{size}", "{seed}"))
    params:
        dtype=DTYPE,
    threads: THREADS
    resources:
        gpu=GPU_PER_JOB,
    conda:
        "../envs/consert.yaml"
    shell:
        device_env(gpu_job=True)
        + harness_command("sgopt --config {input.config:q} --evaluate {output.evaluation:q} "
        "--curve {output.curve:q} --eval-dtype {params.dtype:q} > {log:q} 2>&1")


rule topk_curve:
    """Figure 4 data, from the top-k statistics in the model's vector cache (no encoding)."""
    input:
        unpack(figure_model_inputs),
    output:
        paths.topk_eval("{size}", "{which}"),
    log:
        "logs/topk/{size}-{which}.log",
    benchmark:
        "benchmarks/topk/{size}-{which}.tsv"
    params:
        model=topk_model,
    threads: THREADS
    conda:
        "../envs/consert.yaml"
    shell:
        consert_shell("topk {params.model:q} --vectors {input.vectors:q}")


rule stsb_predictions:
    """Figure 1 data: per-pair gold score and cosine on STS-B test, from the model's vector cache."""
    input:
        unpack(figure_model_inputs),
    output:
        paths.predictions_eval("{size}", "{which}"),
    log:
        "logs/predictions/{size}-{which}.log",
    benchmark:
        paths.benchmark(paths.predictions_eval("{size}", "{which}"))
    params:
        model=topk_model,
    threads: THREADS
    conda:
        "../envs/consert.yaml"
    shell:
        consert_shell("predictions {params.model:q} --vectors {input.vectors:q}")
