"""Compilation to the engine: from a TOML file or a dict to a validated scenario and its engine IR.

``loader`` reads TOML and applies ``--set`` overrides, ``errors`` turns validation errors into lines naming the
user's fields, ``compiler`` checks the whole-scenario rules (names, connectivity, thresholds against buffers) and
writes the IR the Rust engine runs, ``pfc`` is the PFC step of that (headroom, thresholds), ``network`` the
compiled nodes and links both share, and ``engine`` loads the extension ``cnsim._core`` on first use.
"""
