"""Sequence-mixing ops as pure functions: a torch reference everywhere, fast backends where installed."""
