rule table1:
    output:
        report("results/table1_datasets.csv", caption="../report/table1.rst", category="Tables"),
    log:
        "logs/table1.log",
    params:
        data=DATA,
    conda:
        "../envs/consert.yaml"
    shell:
        "consert table1 --data {params.data} --output {output} > {log} 2>&1"
