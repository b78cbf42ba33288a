"""Scenario definition: what a user writes, as typed models.

``spec`` holds the pydantic models of a scenario file (topology, links, traffic, congestion management,
flow control, observation, run), ``topology`` and ``presets`` the named networks a scenario starts from,
``units`` and ``quantities`` the parsing and printing of quantities with units (``10Gbps``, ``150KB``), ``framesizes``
the frame-size distributions, and ``describe`` the reference of every field (``cnsim describe``, ``cnsim docs``).
Nothing here runs the engine or writes files; the scheme models live in :mod:`cnsim.schemes` and the bundled
flow-size distributions in :mod:`cnsim.workloads`.
"""
