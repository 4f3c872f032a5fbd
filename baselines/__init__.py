"""Baselines of the ConSERT paper (BERT pooling, whitening, flow, SG-OPT, GloVe, top-k masking)."""
