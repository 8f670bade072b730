"""ioadvisor: an I/O tuning advisor for HPC parallel file systems."""

__version__ = "0.1.0"
