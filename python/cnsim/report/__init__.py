"""Reports and plots of experiments.

``document`` writes the HTML and Markdown report of a reproduction or a sweep folder (published numbers beside
cnsim's, verdicts, figures), and ``sweep_plot`` draws a metric of a sweep against a parameter (``cnsim plot``).
The plots of a single run are :mod:`cnsim.results.plot`.
"""
