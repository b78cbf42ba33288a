"""Packet traces of a run (``[[observe.pcap]]``): the libpcap bytes the engine captured, appended to
``pcap/<name>.pcap`` in the output folder as the run goes (``crates/cnsim-core/src/net/pcap.rs`` writes the
frames; docs/pcap.md says what each cnsim frame becomes on the wire)."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def write(sim: Any, folder: Path) -> None:
    """Append what the engine captured since the last call to the run's pcap files (nothing without
    captures; the first call creates each file with its header)."""
    chunks = sim.take_pcap()
    if not chunks:
        return
    (folder / "pcap").mkdir(exist_ok=True)
    for name, data in chunks:
        if data:
            with open(folder / "pcap" / f"{name}.pcap", "ab") as f:
                f.write(data)
