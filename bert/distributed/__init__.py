"""Data parallelism: process groups from the launcher's environment (launch), the launch plan and Slurm
(plan, slurm), the clipping modes (clipping, clip_hook), the balance exchanges between ranks (presort,
row_exchange) and the naming of lost ranks (liveness)."""
