"""Language modelling (the xLSTM paper's Sections 4.2-4.3, Appendix B.2): next-token prediction on a corpus tokenised
with GPT-2's BPE.

`tokenizer` sets up and builds the tokenizer offline; `corpus` reads a corpus (hub id, local files, or an
`offline_corpus`) as documents; `splits` keeps training, validation and test documents apart; `token_cache`
tokenises once into a memmapped stream; `training_order` and `sequences` serve it by (data seed, step); `data` is
the LightningDataModule; `config.LMTaskConfig` is the torch-free schema of a task config.
`paloma` reads PALOMA's evaluation documents and `paloma_windows` cuts them into the scoring windows the
evaluation (experiments/evaluation) runs a model on.

Nothing is imported here: `tokenizer`, `offline_corpus` and `token_cache` run as commands (`python -m`).
"""
