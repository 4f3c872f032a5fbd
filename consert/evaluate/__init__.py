"""Stage 4, evaluate: the STS protocol (:mod:`.protocol`: cosine against gold, Spearman x 100, SentEval's
aggregates) and the bootstrap of its Spearman correlations (:mod:`.bootstrap`)."""
