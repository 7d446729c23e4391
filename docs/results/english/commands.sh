#!/bin/sh
# How en-small was made (CPU only: one thread, bf16 autocast on an AMX Xeon; about 70 minutes of training).
# Run from the repository root; ../shared/data holds the English data (see its README).
set -e
# 1. the training corpus, one sentence per line (Brown, Austen, WikiText-2, WikiText-103 5k, BookCorpus 5k;
#    SNLI and XSum are kept for evaluation)
python -m experiments.english_corpus --data ../shared/data --out runs/en-small/corpus.txt
# 2. training (resumable: rerunning continues from the last checkpoint)
OMP_NUM_THREADS=1 python -m mlmprob --threads 1 train --out runs/en-small/train \
  --text runs/en-small/corpus.txt --tokenizer-vocab-size 8192 --max-length 64 --heldout-fraction 0.02 \
  --hidden 256 --layers 4 --heads 4 --intermediate 1024 --dropout 0.0 \
  --steps 6000 --batch-size 64 --lr 7e-4 --warmup 300 --mask-rate 0.15 --mask-split 1,0,0 \
  --precision bf16 --seed 0 --eval-every 500 --checkpoint-every 250 --no-progress
# 3. into the package (load_mlm("en-small")), then the held-out evaluation and this folder's README
python -m experiments.english export --run runs/en-small/train
python -m experiments.english evaluate --model en-small --run runs/en-small/train \
  --out docs/results/english --command-file docs/results/english/commands.sh --threads 1
