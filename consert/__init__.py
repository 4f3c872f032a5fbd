"""ConSERT reproduction harness, one subpackage per stage of the pipeline.

Data flows ``data -> encode -> train -> evaluate -> paper``; imports point the other way, downwards only
(``tests/workflow/test_architecture.py`` keeps it so):

- :mod:`consert.data`: the STS sets and NLI files, read from disk (and downloaded, for users online);
- :mod:`consert.encode`: models, pooling, precision and engines, sentence encoding, the vector cache;
- :mod:`consert.evaluate`: the STS protocol (cosine against gold, Spearman) and its bootstrap;
- :mod:`consert.train`: the trainer, its loop, losses, views, augmentations and the authors' recipes;
- ``baselines`` (beside this package): BERT-flow, whitening, poolings, SG-OPT, GloVe, top-k;
- :mod:`consert.paper`: the runs each artifact needs, tables, figures, comparison, claims, recipe card;
- :mod:`consert.bench`: benchmarks against references; :mod:`consert.cli`: one module per command.

The trainer selects its checkpoint on STS-B dev, so ``train`` imports ``evaluate``: the import order is
``data < encode < evaluate < train < baselines < paper < bench < cli``, with ``io``, ``hardware`` and
``provenance`` below them all.
"""

__version__ = "0.1.0"
