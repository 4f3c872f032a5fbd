"""Baselines of the ConSERT paper (BERT pooling, whitening, flow, SG-OPT, GloVe, top-k masking)."""

#: The baselines ``consert baseline NAME`` evaluates (SG-OPT trains: ``consert sgopt``).
BASELINES = ("pooling", "whitening", "flow", "glove")
