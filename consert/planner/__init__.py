"""The planner: what a workflow config asks for, read once and turned into jobs.

- :mod:`~consert.planner.keys`: the config's keys, declared once (types, defaults, descriptions; the schema and
  ``config/README.md``'s table are generated from them);
- :mod:`~consert.planner.load`: reading a config, every fault in one line, into the typed config;
- :mod:`~consert.planner.plan`: the training runs each artifact needs (:class:`~consert.planner.plan.RunSpec`);
- :mod:`~consert.planner.design`: the comparison's design (seeds, rows, the gate's rates under it);
- :mod:`~consert.planner.run_configs`, :mod:`~consert.planner.encoding`, :mod:`~consert.planner.comparison`: the
  settings each job reads, derived from the config once;
- :mod:`~consert.planner.paths`: where each job's file goes.

The workflow (``workflow/rules/common.smk``) holds the rules' values and input functions built from these; the
commands that take ``--configfile`` read a config through :func:`consert.planner.load.load_workflow_config`.
"""
