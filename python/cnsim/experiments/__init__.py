"""Experiments: many runs and what they show.

``sweep`` expands a sweep file into runs and runs them (locally or on a dask cluster), ``sweep_summary``
reduces a sweep's runs to a table with confidence intervals, ``reproduce`` runs the seed studies in ``studies/``
and gives each published number its verdict, ``verdicts`` counts those verdicts, ``series`` computes metrics
from a run's time series, ``statreg`` is the statistical regression check against recorded reference metrics,
and ``selftest`` compares the fingerprints of the shipped scenarios.
"""
