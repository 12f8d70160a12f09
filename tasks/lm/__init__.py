"""Language modelling (the xLSTM paper's Sections 4.2-4.3, Appendix B.2): next-token prediction on a corpus tokenised
with GPT-2's BPE. `tokenizer` sets up and builds the tokenizer offline."""
