"""The harness's benchmarks of itself: measurements of how fast and how close to the hardware it runs, kept out of
the user's package (``consert``, where the paper's cost plan, ``consert bench --config``, stays). Run from the
checkout, ``python -m harness_bench COMMAND`` (``--help`` lists them):

- ``references``: the harness against its references in one run: on a CPU (:mod:`.references_cpu`) the 7-set
  evaluation and a training step against sentence-transformers'; on CUDA (:mod:`.references_cuda`) the paper-scale
  trainer against a plain PyTorch loop and a compiled ceiling;
- ``limits``: the cost table of a workflow config with each kind's step against the card's limit
  (:mod:`.speed_of_light`);
- ``share``: whether jobs of some kinds run together raise a card's throughput (:mod:`.sharing`).

``scripts/gpu_checks.sh`` runs them on a GPU box; the Performance page reports what they measured.
"""
