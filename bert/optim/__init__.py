"""The optimizers a descriptor names: LAMB with the reference semantics (lamb), AdamW, their parameter groups
and learning-rate schedule (factory, schedule), and the memory traffic of one update for the simulator
(traffic)."""
