"""Evaluation of trained language models beyond validation perplexity (DESIGN.md: lm-eval adapter, PALOMA, generation
speed): PALOMA's windows scored by a model (paloma_likelihoods) and its perplexities per domain, per source and as
the paper's tables (paloma_scores)."""
