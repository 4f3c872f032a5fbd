rule consert_train:
    """One ConSERT run (any setting, any sweep point), then its evaluation on the 7 sets."""
    input:
        senteval=DATA,
        config=artifacts.run_config("{run}"),
        stage1=stage1_model,
        external=lambda wc: external_inputs(RUN_INPUTS[wc.run]),
    output:
        model=model_output(artifacts.run_model("{run}")),
        evaluation=artifacts.consert_eval("{run}"),
        curve=artifacts.run_curve("{run}"),
    wildcard_constraints:
        run=runs_in(RUNS),
    log:
        "logs/consert/{run}.log",
    benchmark:
        artifacts.benchmark(artifacts.consert_eval("{run}"))
    params:
        dtype=DTYPE,
        keep_vectors=[],  # the arguments that keep the evaluation's vectors (the rule below)
    threads: THREADS
    resources:
        gpu=GPU_PER_JOB,
    conda:
        "../envs/consert.yaml"
    shell:
        device_env(GPU_SHARE)
        + "consert train --config {input.config} --evaluate {output.evaluation} "
        "--curve {output.curve} --eval-dtype {params.dtype} {params.keep_vectors:q} > {log} 2>&1"


ruleorder: consert_train_keeping_vectors > consert_train


use rule consert_train as consert_train_keeping_vectors with:
    """A run whose evaluation vectors other rules read (BERT-flow on the NLI runs; the run Figures 1
    and 4 show, with the top-k statistics): they are kept as the run's vector cache."""
    output:
        model=model_output(artifacts.run_model("{run}")),
        evaluation=artifacts.consert_eval("{run}"),
        curve=artifacts.run_curve("{run}"),
        vectors=artifacts.run_vectors("{run}"),
    wildcard_constraints:
        run=runs_in(VECTOR_RUNS),
    params:
        dtype=DTYPE,
        keep_vectors=lambda wc, output: [
            *("--save-vectors", output.vectors, "--save-pooling", FLOW_POOLING),
            *("--topk-max", topk_max(output.vectors)),
        ],

