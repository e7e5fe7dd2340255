"""BERT for pre-training: the config dataclass (config), the model (pretraining), its attention kernels
(attention, varlen_attention, padding, token_rounding), apex's fused LayerNorm where present (fused), the
table of the reference's TensorFlow names (tf_names) and the model's size as DDP sees it (size).

Nothing is imported here: bert.system reads the config without loading torch."""
