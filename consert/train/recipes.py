"""The ConSERT authors' training recipes, stage by stage, with the source of every value: data only.

The records of :mod:`consert.train.modes` name these recipes (one record per trainable mode). A run's stage decides
its defaults: ``unsup`` (from BERT), the NLI stages ``sup`` (SBERT-NLI) and ``joint``, and the second stages
``sup-unsup`` and ``joint-unsup`` (unsupervised, starting from the matching NLI stage). The values are the authors'
base-model scripts (ConSERT repository, ``scripts/*-base.sh``) with ``main.py``'s defaults for what a script leaves
out; where the paper's text disagrees (dropout, the classifier features) the scripts win, and the paper's variant
stays reachable by config. :data:`COMMON` holds what every ConSERT stage shares, :data:`FALLBACK` what a recipe
leaves unset. BERT-flow's own BERT-NLI recipe (:data:`BERTFLOW_NLI`) is here too: it trains on the same loop.
"""

from __future__ import annotations

from typing import Any

#: The classifier input of the authors' scripts (``--concatenation_sent_max_square``); the paper
#: and SBERT use ("u", "v", "abs_diff").
AUTHORS_CLASSIFIER = ("u", "v", "abs_diff", "max_square")

#: Unsupervised ConSERT from BERT: the authors' value of every key that differs between stages, and its script.
UNSUP: dict[str, Any] = {
    "source": "scripts/unsup-consert-base.sh",
    "objective": "contrastive",
    "lr": 5e-7,
    "batch_size": 96,
    "epochs": 10,
    "patience": 10,
    "views": ("feature_cutoff", "shuffle"),  # --da_final_1 feature_cutoff --da_final_2 shuffle
    "feature_cutoff": 0.2,
    "remove_dropout": True,  # --no_dropout: only this run
}
#: SBERT-NLI, ConSERT's supervised stage.
SUP: dict[str, Any] = {
    "source": "scripts/sup-sbert-base.sh (lr, epochs: main.py defaults)",
    "objective": "nli",
    "lr": 2e-5,
    "batch_size": 96,
    "epochs": 1,
    "patience": None,  # no --patience: no early stopping (the best dev checkpoint is still kept)
    "remove_dropout": False,
    "classifier_features": AUTHORS_CLASSIFIER,
}
#: The joint stage: NLI and the contrastive loss.
JOINT: dict[str, Any] = {
    "source": "scripts/sup-consert-joint-base.sh (lr, epochs: main.py defaults)",
    "objective": "joint_nli",
    "lr": 2e-5,
    "batch_size": 96,
    "epochs": 1,
    "patience": None,
    "views": ("none", "token_cutoff"),  # --data_augmentation_strategy cutoff --cutoff_direction row
    "token_cutoff": 0.1,
    "remove_dropout": False,
    "classifier_features": AUTHORS_CLASSIFIER,
}
#: The unsupervised second stage from the sup stage's model.
SUP_UNSUP: dict[str, Any] = {
    "source": "scripts/sup-consert-sup-unsup-base.sh",
    "objective": "contrastive",
    "lr": 5e-7,
    "batch_size": 96,
    "epochs": 25,
    "patience": 10,
    "views": ("none", "feature_cutoff"),  # --data_augmentation_strategy cutoff --cutoff_direction column
    "feature_cutoff": 0.1,
    "remove_dropout": False,
}
#: The unsupervised second stage from the joint stage's model.
JOINT_UNSUP: dict[str, Any] = {
    "source": "scripts/sup-consert-joint-unsup-base.sh",
    "objective": "contrastive",
    "lr": 5e-7,
    "batch_size": 96,
    "epochs": 25,
    "patience": 10,
    "views": ("none", "shuffle"),  # --data_augmentation_strategy shuffle
    "remove_dropout": False,
}

#: Where the authors' BERT-large scripts (``scripts/*-large.sh``) differ from the base ones, stage by stage. The
#: joint and joint-unsup scripts pass max_seq_length 40: a later retrain (the authors' README, line 73); the paper's
#: Table 3 used 64, the comparison's reference.
UNSUP_LARGE: dict[str, Any] = {
    "source": "scripts/unsup-consert-large.sh",
    "views": ("none", "shuffle"),  # --data_augmentation_strategy shuffle
    "remove_dropout": False,  # no --no_dropout
    "epochs": 25,
    "eval_every": 100,
}
SUP_LARGE: dict[str, Any] = {"source": "scripts/sup-sbert-large.sh"}
JOINT_LARGE: dict[str, Any] = {
    "source": "scripts/sup-consert-joint-large.sh (max length: the paper's 64, not the retrain's 40)"
}
SUP_UNSUP_LARGE: dict[str, Any] = {"source": "scripts/sup-consert-sup-unsup-large.sh", "epochs": 10}
JOINT_UNSUP_LARGE: dict[str, Any] = {
    "source": "scripts/sup-consert-joint-unsup-large.sh (max length: the paper's 64, not the retrain's 40)",
    "epochs": 10,
}

#: What every stage shares (main.py and the authors' modified sentence-transformers ``fit``).
COMMON: dict[str, Any] = {
    "temperature": 0.1,
    "contrastive_weight": 0.15,  # --cl_rate 0.15, applied even with --cl_loss_only
    "adam_bias_correction": False,  # transformers.AdamW(..., correct_bias=False)
    "adam_eps": 1e-6,
    "weight_decay": 0.01,
    "max_grad_norm": 1.0,
    "warmup_ratio": 0.1,
    "eval_every": 200,
    "eval_grid": "epoch",  # steps counted within each epoch, plus an evaluation at every epoch's end
    "train_pooling": "mean",  # the sentence-transformers model's mean pooling
    "dev_pooling": "mean",  # checkpoint selection: the model's own last-layer mean
    "eval_pooling": "mean:-2,-1",  # the reported test numbers: last-two-layer average
    "max_length": 64,
    "seed": 1,
    "dropout": 0.2,  # the dropout view's rate: the paper, Implementation Details ("The ratio of dropout is set to 0.2")
    "adversarial_epsilon": 1.0,  # the adversarial view's FGV step: the harness's value (the paper states none)
}


#: Stage-dependent keys no script of a stage sets: the paper's rates and the unsupervised views, and
#: ConSERT's objective (no projection head, no augmentation discriminator).
FALLBACK: dict[str, Any] = {
    "token_cutoff": 0.15,
    "feature_cutoff": 0.2,
    "views": ("feature_cutoff", "shuffle"),  # the unsupervised run's
    "classifier_features": AUTHORS_CLASSIFIER,
    "loss": "nt_xent",
    "projection": "none",
    "eval_max_length": None,  # ConSERT evaluates at its training max_length
    "classifier_bias": True,  # SBERT's nn.Linear classifier
    "classifier_init_std": None,  # nn.Linear's own initialisation (SBERT's classifier)
    "final_state": "best",  # the best STS-B dev checkpoint (the authors' fit with an evaluator)
}


#: BERT-flow's own BERT-NLI (Li et al. 2020), the encoder its "NLI" rows (ConSERT's Table 3) fit the flow
#: on: bohanli/BERT-flow's README ("Fine-tune BERT with NLI supervision": TASK_NAME=ALLNLI, 1 epoch, lr
#: 2e-5, batch 16), run_siamese.py (the siamese classifier) and optimization.py (BERT's optimiser).
BERTFLOW_NLI: dict[str, Any] = {
    "source": "bohanli/BERT-flow README (ALLNLI command) + run_siamese.py + optimization.py",
    "objective": "nli",
    "lr": 2e-5,
    "batch_size": 16,  # --train_batch_size=16
    "epochs": 1,
    "patience": None,
    "remove_dropout": False,  # is_training: BERT's dropout 0.1
    "classifier_features": ("u", "v", "abs_diff"),  # [u, v, |u - v|] (run_siamese.py)
    "classifier_bias": False,  # logits = output W^T, no bias
    "classifier_init_std": 0.02,  # W ~ truncated_normal_initializer(stddev=0.02) (run_siamese.py)
    "train_pooling": "mean",  # sentence_embedding_type "avg": last-layer masked mean
    "final_state": "last",  # the checkpoint after the last step (model.ckpt-60108): no dev selection
    "eval_every": 1_000_000,  # no evaluation while training: the loop scores dev once, after the last step
    "eval_grid": "global",
    "adam_bias_correction": False,  # BERT's AdamWeightDecayOptimizer
    "adam_eps": 1e-6,
    "weight_decay": 0.01,  # not on LayerNorm and bias
    "warmup_ratio": 0.1,  # warmup_proportion 0.1, then linear decay
}
