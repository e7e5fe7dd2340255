"""Data parallelism inside the ranks: process groups from the launcher's environment (launch), each rank's CPU
binding (cpu_binding), the clipping modes (clipping, clip_hook), the balance exchanges between ranks (presort,
row_exchange) and the naming of lost ranks (liveness). Starting the ranks is bert.launch."""
