"""Results and output: what a run gives back and what it writes.

``result`` is the in-memory :class:`~cnsim.results.result.Result` (summary, tables, flat summary rows), ``stream``
writes a run's time series to Parquet while it runs, ``outdir`` owns output folders (the files a run writes,
atomic commit, never deleting a user's files), ``slowdown`` computes the ideal completion time behind the FCT
slowdown, and ``plot`` draws a single run's queue and throughput plots.
"""
