"""The synthetic language for CPU development: its grammar, written as HDF5 shards or as reference-layout text."""
