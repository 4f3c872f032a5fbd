rule consert_train:
    """One ConSERT run (any setting, any sweep point), then its evaluation on the 7 sets."""
    input:
        senteval=DATA,
        config=paths.train_yaml("{run}"),
        stage1=stage1_model,
        hub=lambda wc: hub_inputs(TRAIN_CONFIGS[wc.run].model),
        external=lambda wc: external_inputs(RUN_INPUTS[wc.run]),
    output:
        model=model_output(paths.run_model("{run}")),
        evaluation=paths.consert_eval("{run}"),
        curve=paths.run_curve("{run}"),
    wildcard_constraints:
        run=runs_in(RUNS),
    log:
        "logs/consert/{run}.log",
    benchmark:
        paths.benchmark(paths.consert_eval("{run}"))
    params:
        dtype=DTYPE,
        keep_vectors=[],  # the arguments that keep the evaluation's vectors (the rule below)
    threads: THREADS
    priority: run_priority
    resources:
        gpu=GPU_PER_JOB,
    conda:
        "../envs/consert.yaml"
    shell:
        device_env(gpu_job=True)
        + harness_command("train --config {input.config:q} --evaluate {output.evaluation:q} "
        "--curve {output.curve:q} --eval-dtype {params.dtype:q} {params.keep_vectors:q} > {log:q} 2>&1")


ruleorder: consert_train_keeping_vectors > consert_train


use rule consert_train as consert_train_keeping_vectors with:
    """A run whose evaluation vectors other rules read (BERT-flow on the NLI runs; the run Figures 1
    and 4 show, with the top-k statistics): they are kept as the run's vector cache."""
    output:
        model=model_output(paths.run_model("{run}")),
        evaluation=paths.consert_eval("{run}"),
        curve=paths.run_curve("{run}"),
        vectors=paths.run_vectors("{run}"),
    wildcard_constraints:
        run=runs_in(VECTOR_RUNS),
    params:
        dtype=DTYPE,
        keep_vectors=lambda wc, output: [
            *("--save-vectors", output.vectors, "--save-pooling", FLOW_POOLING),
            *("--topk-max", topk_max(output.vectors)),
        ],


rule check_box:
    """Minutes on a new GPU box (`snakemake check_box`): Table 2's first ConSERT-base run, its resolved recipe, for
    CHECK_STEPS steps (fewer where the config's runs are shorter), its step run as the full run runs it (packed, as
    CUDA graphs, compiled: CHECK_EXECUTION_STEPS), then its evaluation on the 7 sets: the model downloads, the card
    trains, the precision is measured and the data is read. It prints its steady rate and each table's planned
    training steps at that rate (`consert bench --rate-from`: a first estimate). Not a reproduction: its rows go to
    results/check/, which nothing of the paper reads; its model is deleted once evaluated (as a target's output,
    a temp() folder would be kept)."""
    input:
        senteval=DATA,
        config=paths.train_yaml(CHECK_RUN),
        workflow=WORKFLOW_CONFIG,
        hub=hub_inputs(TRAIN_CONFIGS[CHECK_RUN].model),
        external=lambda wc: external_inputs(RUN_INPUTS[CHECK_RUN]),
    output:
        evaluation=CHECK_EVALUATION,
        curve=CHECK_EVALUATION.replace(".csv", "-curve.csv"),
        projection=CHECK_PROJECTION,
    log:
        "logs/check_box.log",
    benchmark:
        "benchmarks/check_box.tsv"
    params:
        dtype=DTYPE,
        steps=CHECK_STEPS,
        execution_steps=CHECK_EXECUTION_STEPS,
        model="runs/check-box",
    threads: THREADS
    resources:
        gpu=GPU_PER_JOB,
    conda:
        "../envs/consert.yaml"
    shell:
        device_env(gpu_job=True)
        + harness_command("train --config {input.config:q} --set max_steps={params.steps:q} --set output_dir={params.model:q} "
        "--execution-steps {params.execution_steps:q} --overwrite --evaluate {output.evaluation:q} "
        "--curve {output.curve:q} --eval-dtype {params.dtype:q} > {log:q} 2>&1 "
        "&& grep -h 'steps run' {log:q} "
        "&& consert bench --config {input.workflow:q} --rate-from {params.model:q} --data {input.senteval:q} "
        "--output {output.projection:q} 2>> {log:q} | tee -a {log:q} && rm -r {params.model:q}")
