"""Replay plans and the MPI executor. Imports only numpy and mpi4py: it runs on compute nodes."""
