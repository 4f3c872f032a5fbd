"""The verdicts: each reproduced cell against its published number under a declared decision rule
(:mod:`~consert.verdict.decision`, :mod:`~consert.verdict.yardstick`), the declared blocks of rows compared
(:mod:`~consert.verdict.compare`), the gate (:mod:`~consert.verdict.gate`), the paper's claims
(:mod:`~consert.verdict.claims`) and the gate's error rates by simulation (:mod:`~consert.verdict.gate_rates`)."""
