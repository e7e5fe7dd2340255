"""Offline dataset preparation behind `mlperf-bert data ...`: text parts to shards, reshard, stratify, verify,
and the synthetic corpus. Nothing here runs during training; the training input path is bert.data."""
