"""ConSERT reproduction harness: data, encoders, the STS protocol, training and the paper's artifacts."""

__version__ = "0.1.0"
