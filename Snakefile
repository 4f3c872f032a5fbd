# ConSERT reproduction: every table and figure of the paper, compared with the published numbers.
#   snakemake --profile profiles/default --configfile config/offline.yaml   (offline stand-in, CPU)
#   snakemake --profile profiles/default                                   (the paper, GPU box)
#   snakemake --profile profiles/slurm                                     (the paper, SLURM)
import re

from snakemake.utils import min_version

min_version("9.17")


# The config comes from the profile (profiles/default: config/config.yaml, the paper) or from
# --configfile (config/offline.yaml, config/test.yaml), never merged with another config file.
include: "workflow/rules/common.smk"
include: "workflow/rules/configs.smk"
include: "workflow/rules/data.smk"
include: "workflow/rules/baselines.smk"
include: "workflow/rules/consert.smk"
include: "workflow/rules/yours.smk"
include: "workflow/rules/paper.smk"
include: "workflow/rules/report.smk"


wildcard_constraints:
    size="|".join(SIZES),
    seed=r"\d+",
    which="bert|consert",
    k=r"all|\d+",
    run="|".join(re.escape(run) for run in [*RUNS, *SGOPT_RUNS]) or "no-runs",


report: "workflow/report/workflow.rst"


rule all:
    input:
        get_final_output(),
    default_target: True


onstart:
    from consert.workflow_hooks import on_start

    # the device check's question, asked only of a cuda config run here: does a job to run declare the gpu resource
    gpu_jobs = lambda: any(job.resources.get("gpu", 0) for job in workflow.dag.needrun_jobs())
    for line in on_start(CONFIG, workflow.local_exec, gpu_jobs):
        print(line)


onsuccess:
    from consert.paper.summary import headline, target_headline
    from consert.workflow_hooks import on_end

    for line in on_end(CONFIG, workflow.local_exec):
        print(line)
    # a table or figure asked for by itself: its own published rows decided (provisional where others did not run)
    asked = [a for a in COMPARED_ARTIFACTS if f"results/{a.csv}" in workflow.dag.targetfiles]
    rows = [target for target in ROW_TARGETS if target in workflow.dag.targetfiles]
    if rows:  # one published row on its own: its verdict
        from consert.paper.row_targets import verdict_lines

        print("\n".join(line for target in rows for line in verdict_lines(target)))
    elif asked and not Path("results/comparison.csv").is_file():
        settings = ComparisonConfig.of_workflow(CONFIG, Path(PUBLISHED))
        print("\n".join(target_headline("results", PUBLISHED, settings, asked)))
    else:
        print("\n".join(headline("results", REPORT_COMMAND)))


onerror:
    from consert.paper.summary import failure_lines
    from consert.workflow_hooks import on_end

    for line in on_end(CONFIG, workflow.local_exec):
        print(line)
    print("\n".join(failure_lines(log)))
