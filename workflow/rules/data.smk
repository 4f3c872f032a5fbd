localrules:
    table1,  # pair counts of the data files: seconds of CPU, not worth a cluster job and its queue


if FOUND_DATA is None:  # only then: a forced rerun never touches a data folder the workflow did not download

    localrules:
        senteval_data,  # a download: where the workflow runs has the network, a cluster's compute nodes often do not

    rule senteval_data:
        """SentEval's STS sets, downloaded into the default data folder when none was found on disk (needs
        network; offline the job fails in one line that says where to put the data)."""
        output:
            directory(DATA),
        log:
            "logs/senteval_data.log",
        params:
            dest=lambda wildcards, output: Path(output[0]).parent,
        conda:
            "../envs/consert.yaml"
        shell:
            harness_command("download-data --dest {params.dest:q} > {log:q} 2>&1")


for source in DOWNLOADS:  # only what this run needs and nothing of it is on disk: a forced rerun overwrites no one's files

    rule:
        """One input the config reads, from its official source into the place the config names (consert
        download-data; needs network, where snakemake runs: compute nodes often have none)."""
        name:
            f"{source.name}_data"
        localrule: True
        output:
            download_outputs(source),
        log:
            f"logs/{source.name}_data.log",
        params:
            flag=f"--{source.name}",  # into the place it names by default: this rule's outputs
        conda:
            "../envs/consert.yaml"
        shell:
            harness_command("download-data {params.flag:q} > {log:q} 2>&1")


if HUB_DOWNLOADS:

    rule hub_model:
        """A hub model the config names and the hub's cache does not hold, fetched into the cache where snakemake runs
        (its configs, tokenizer and weights: `consert download-data --model`; needs network) before any job that
        reads it: those read the cache offline, on nodes without network too."""
        output:
            paths.hub_record("{model}"),
        wildcard_constraints:
            model="|".join(re.escape(slug) for slug in HUB_DOWNLOADS),
        localrule: True
        log:
            "logs/hub_model/{model}.log",
        params:
            name=lambda wc: HUB_DOWNLOADS[wc.model],
        conda:
            "../envs/consert.yaml"
        shell:
            harness_command("download-data --model {params.name:q} --record {output:q} > {log:q} 2>&1")


rule table1:
    input:
        senteval=DATA,
    output:
        report(TABLE1, caption="../report/table1.rst", category="Tables"),
    log:
        "logs/table1.log",
    conda:
        "../envs/consert.yaml"
    shell:
        harness_command("table1 --data {input.senteval:q} --output {output:q} > {log:q} 2>&1")
