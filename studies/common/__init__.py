"""Helpers shared by several studies: report tables and figures of the paper studies, machine lines of benchmarks."""
