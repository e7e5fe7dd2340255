"""The training input path: MLPerf HDF5 shards, samplers, length-balanced batches and the loader thread, and
the start-up checks of a dataset directory. Offline preparation lives in bert.prep."""
