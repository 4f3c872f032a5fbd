"""Stage 3, train: every trainable mode (:mod:`.modes`: ConSERT's stages, the contrastive family, BERT-flow's NLI
encoder, and SG-OPT's loop) on one trainer.

- :mod:`.modes`: one record per trainable mode; :mod:`.recipes`, :mod:`.methods`: the authors' values of every key,
  with their sources; :mod:`.config`: the validated
  :class:`~consert.train.config.TrainConfig` a run is built from;
- :mod:`.trainer`: the stages (unsupervised, NLI, joint, two-stage); :mod:`.loop`: the optimisation loop
  with dev-set selection; :mod:`.optim`: the authors' AdamW;
- :mod:`.losses`, :mod:`.augcse_heads`, :mod:`.objectives`: the losses, heads and objectives;
- :mod:`.augment`, :mod:`.text_augment`, :mod:`.views`: augmented views at the embedding layer or the text;
- :mod:`.packed`, :mod:`.graphs`: the packed forward and its CUDA-graph replay;
- :mod:`.export`: the trained encoder saved in sentence-transformers' format.
"""
