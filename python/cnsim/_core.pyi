"""Type stubs of the engine extension ``cnsim._core`` (crates/cnsim-py)."""

from typing import Callable, TypeAlias, final

__all__ = [
    "version",
    "indent_json",
    "schemes",
    "validate",
    "run",
    "flow_paths",
    "pair_paths",
    "Simulation",
    "ScenarioError",
    "InvariantError",
]

_Column: TypeAlias = tuple[str, bytes] | list[str]
"""A result column: ``(numpy dtype string, little-endian raw bytes)`` for numbers, names as a list."""

class ScenarioError(ValueError):
    """The scenario IR is invalid (the message names the field path)."""

class InvariantError(RuntimeError):
    """A conservation identity failed at the end of a run (a model bug)."""

def indent_json(compact: str) -> str:
    """``compact`` JSON (``separators=(",", ":")``, no whitespace outside strings) laid out as
    ``json.dumps(..., indent=2)`` writes it, byte for byte."""

def version() -> str:
    """Version of the cnsim-core crate."""

def schemes() -> list[str]:
    """Registered congestion-management scheme tags, in registry order."""

def flow_paths(ir_json: str) -> list[list[int]]:
    """Node path (node indices: source host, switches, destination host) of every flow under the
    engine's routes; empty when unreachable."""
    ...

def pair_paths(ir_json: str, pairs: list[tuple[int, int]]) -> list[list[int]]:
    """Node path from host ``src`` to host ``dst`` (node indices) for each pair, on the engine's
    single route; empty when unreachable."""
    ...

def validate(ir_json: str) -> None:
    """Parse, validate and compile an IR without running it (raises ScenarioError)."""

def run(
    ir_json: str, progress: Callable[[float], object] | None = None, chunk_ps: int = 0
) -> tuple[str, dict[str, dict[str, _Column]]]:
    """Run a simulation: ``(summary JSON, {table: {column: Column}})``; ``progress`` gets the simulated
    time in seconds between chunks (``chunk_ps`` = 0: 1/200 of the run)."""

@final
class Simulation:
    """A simulation driven step by step: the time series are drained in chunks so that a caller writing
    them out keeps memory independent of the run's length (``cnsim.results.stream``)."""

    duration_ps: int
    now_ps: int
    sample_interval_ps: int
    def __new__(cls, ir_json: str) -> Simulation: ...
    def run_until(self, t_ps: int) -> bool:
        """Process the events before min(t_ps, duration) (GIL released); True at the end of the run."""
    def run_batch(self, t_ps: int, step_ps: int, rows: int, budget_s: float) -> bool:
        """Run towards ``t_ps`` in steps of ``step_ps`` (GIL released) until the end of the run, ``t_ps``, a step
        after which at least ``rows`` rows are buffered, or ``budget_s`` seconds of wall time; True at the end of
        the run. Where a batch ends depends on the simulated time only."""
    def buffered_rows(self) -> int:
        """Rows of queue_ts, rp_rate, tcp_ts and pause_ts recorded since the last drain, of
        throughput_ts and flow_tp for the bins that can no longer change, and of fct for the
        transfers settled since (observe.fct)."""
    def drain_series(self) -> tuple[int, dict[str, dict[str, _Column]]]:
        """(sample instants covered, those seven tables' rows since the last drain), forgotten by the engine."""
    def close_series(self) -> tuple[int, dict[str, dict[str, _Column]]]:
        """drain_series after closing the run: every row left, with the last throughput bins and the
        fct rows of the transfers the run's end closed; finish then returns empty series."""
    def take_pcap(self) -> list[tuple[str, bytes]]:
        """(file name, libpcap bytes written since the last call) per capture of observe.pcap; the file
        header comes with the first call. [] without captures."""
    def static_tables(self) -> dict[str, dict[str, _Column]]:
        """The tables naming the series' ids: queues, links, flows."""
    def finish(self) -> tuple[str, int, dict[str, dict[str, _Column]]]:
        """(summary JSON, samples, tables): the rows not drained yet and every other table."""
