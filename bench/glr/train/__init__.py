"""The GLR training recipe (docs/glr/training.md): a small byte-level language model built from
fla's layers, trained on real text with kcv's kernels, fla's kernels or an fp32 reference.

One file per job: data.py (the corpus as fixed batches), model.py (configs and the model),
reference.py (the fp32 reference recurrences), backends.py (which code runs the recurrence),
loop.py (training, logging, the reproducibility check). bench/glr/train_lm.py is the command."""
