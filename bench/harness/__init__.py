"""Helpers of bench/run: processes and memory, the terminal driver, the benchmark homes."""
