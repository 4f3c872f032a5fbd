"""What the harness's trainer does that its authors' code did not, in the words the recipe card gives it: texts
that several runs' notes share (ConSERT's stages, the contrastive family's methods, SG-OPT's baseline)."""

from __future__ import annotations

#: What attending by FlashAttention's variable-length kernel changes where BERT's attention dropout is on.
ATTENTION_DROPOUT_NOTE = (
    "attention: on CUDA in bf16 the packed step attends by FlashAttention's variable-length kernel over each "
    "text's real tokens (consert.train.packed), equal to the padded attention to bf16 rounding (a CUDA test); "
    "with BERT's attention dropout on, its masks are drawn inside that kernel, so a run equals a padded or "
    "eager run in distribution, not mask for mask"
)
#: What compiling the per-token chain into fused kernels changes (``compile: on`` under CUDA graphs).
FUSED_DROPOUT_NOTE = (
    "fused kernels (compile: on): under CUDA graphs each layer's per-token chain is compiled (consert.train.fused), "
    "equal to the model's layers in float64 with eager's masks (a test); its hidden dropout's masks come from "
    "Inductor's own generator, so a run equals an uncompiled one in distribution, not mask for mask"
)
#: What replaying a dropout-only step as CUDA graphs changes (AugCSE's and SG-OPT's steps).
GRAPHED_DROPOUT_NOTE = (
    "on CUDA the step runs over the real tokens only and is replayed as CUDA graphs (cuda_graphs: auto): the same "
    "arithmetic, but BERT's dropout masks come from the CUDA generator's graph-safe offsets, so a seed need not "
    "draw the masks of an eager run of the same seed; " + ATTENTION_DROPOUT_NOTE
)
#: What replaying the unsupervised step as CUDA graphs changes (its views' random draws).
GRAPHS_NOTE = (
    "on CUDA runs of 500+ steps the unsupervised step is replayed as CUDA graphs (cuda_graphs: auto): the same "
    "arithmetic over the real tokens, but the views' random draws come from the CUDA generator's graph-safe "
    "offsets, so a seed draws other (equally distributed) augmentations than an eager run of the same seed"
)
#: Where the shared loop's evaluation grid differs from the HF Trainer's (the contrastive family's methods).
FAMILY_GRID_NOTE = (
    "dev evaluation: every eval_every steps as the HF Trainer, plus one after the last step when that is off "
    "the grid (the Trainer evaluates on the grid only; with wiki1m SimCSE's 15,625 steps end on it, AugCSE's "
    "4 x 7,813 = 31,252 end 252 steps after its last evaluation)"
)
