"""A run whose time series go to Parquet as it goes: their memory does not grow with the run's length.

The engine (``cnsim._core.Simulation``) runs in steps; whenever ``CHUNK_ROWS`` rows of the time series
(``queue_ts``, ``rp_rate``, ``tcp_ts``, ``pause_ts``, the throughput bins ``throughput_ts`` and
``flow_tp`` that can no longer change, and the ``fct`` rows of the transfers settled since) are
buffered, they are drained and written as row groups of their Parquet file. The files hold exactly
the rows, columns and types that :meth:`cnsim.results.result.Result.save` writes for an in-memory run
(tests/test_stream.py):

* names are joined to ids as ``frames_from_core`` does (``queue`` → ``switch``, ``port``; ``flow`` →
  ``src``, ``dst``; ``link`` → ``from``, ``to``), as dictionary columns whose categories are the sorted
  names and whose index width follows pandas' rule, so that pandas reads them back as the same
  categoricals;
* ``queue_ts`` is sparse: a queue gets rows from the first sample only once it has been seen holding a
  data frame, with zeros before. A queue first seen in a later chunk is missing from the chunks already
  written; :meth:`SeriesWriter.close` then rewrites that file once, chunk by chunk, filling in the zeros
  (the sample instants are ``k · sample_interval``, as the engine takes them);
* ``rp_rate`` and ``pause_ts`` hold change rows (:data:`CHANGE_ROWS`): a flow's rate (a link's paused
  state) at a sample where it differs from the previous sample's. Their files say so in their metadata,
  with the sample grid, and :func:`cnsim.results.result.read_table` gives the value at every sample.

Only pyarrow and numpy are imported here: a short run does not pay for pandas. Nor for
``pyarrow.parquet``: the files are written and read with its engine (``pyarrow._parquet``) through
:class:`ParquetWriter`, :func:`write_parquet` and :class:`ParquetFile`.
"""

from __future__ import annotations

import _thread
import contextlib
import json
import os
import queue
import sys
from pathlib import Path
from typing import Any, Callable, Mapping

import numpy as np

from cnsim.results import capture
from cnsim.results.slowdown import Ideal

# pyarrow's import takes cloudpickle (installed with dask) as its `pickle`, then replaces it with the standard
# library's at once (`pyarrow.lib.pickle` is the standard module): importing cloudpickle (and logging with it)
# only cost 3.7 ms of a 1-ms run. While pyarrow loads, cloudpickle is marked missing, as without dask.
_HIDE_CLOUDPICKLE = "cloudpickle" not in sys.modules
if _HIDE_CLOUDPICKLE:
    sys.modules["cloudpickle"] = None  # type: ignore[assignment]
try:
    import pyarrow as pa
    from pyarrow import _parquet
finally:
    if _HIDE_CLOUDPICKLE and "cloudpickle" in sys.modules and sys.modules["cloudpickle"] is None:
        del sys.modules["cloudpickle"]

CHUNK_ROWS = 1 << 15
"""Buffered series rows that make a batch (one row group per table) once a run is under way."""

FIRST_ROWS = 1 << 12
"""Rows of a run's first batch; each next batch may hold twice as many, up to ``CHUNK_ROWS``: a short run
hands its rows to the writer while it goes on (what is written after the engine stops is at most
half of them), a long one in batches large enough that their fixed cost stays small."""

TAIL = 10
"""The rows buffered when the last ``1/TAIL`` of the run starts are handed over then: what is left to
write once the engine stops (one batch, at most) is the rows of that last part only."""

STEP_SAMPLES = 64
"""The engine runs at most this many sample intervals between two looks at its buffer, so that a
drain never waits for more than ``STEP_SAMPLES`` samples' rows beyond ``CHUNK_ROWS``."""

SERIES = {
    "queue_ts": ("queues", "queue", "bytes"),
    "rp_rate": ("flows", "flow", None),
    "tcp_ts": ("flows", "flow", None),
    "pause_ts": ("links", "link", None),
    "throughput_ts": (None, None, None),
    "flow_tp": ("flows", "flow", None),
    "fct": ("flows", "flow", None),
}
"""Streamed tables: (table naming the ids or None, id column, value column of an id-sparse series or
None). ``fct`` holds the rows of the transfers settled since the last drain (``observe.fct``), with
their FCT slowdown added here."""

CHANGE_ROWS = {"rp_rate": ("flow", "rate_bps"), "pause_ts": ("link", "paused")}
"""Series the engine records as change rows: (id column, value column). A series' value before its first
row is 0 (a link never paused has no row; every flow has a row at the first sample)."""


WRITER_OPTIONS: dict[str, Any] = {
    "version": "2.6",
    "compression": "snappy",
    "use_dictionary": True,
    "write_statistics": True,
    "writer_engine_version": "V2",
    "data_page_version": "1.0",
}
"""The options ``pyarrow.parquet.ParquetWriter`` (and ``write_table``) gives its engine by default where
the engine's own default differs (the others are the same): the files are byte for byte those
``pyarrow.parquet`` writes (tests/test_stream.py)."""


class ParquetWriter:
    """A Parquet file written table by table: ``pyarrow.parquet.ParquetWriter``'s writes without importing
    ``pyarrow.parquet``, whose ``pyarrow.fs`` (``ssl``, the S3, GCS, HDFS and Azure file systems) took 36 M
    instructions, 3.3 % of a 1-ms run. ``where``: a local path or a pyarrow output stream."""

    def __init__(self, where: Path | pa.NativeFile, schema: pa.Schema, **options: Any):
        self.schema = schema
        self.writer = _parquet.ParquetWriter(where, schema, **{**WRITER_OPTIONS, **options})
        self.is_open = True

    def write_table(self, table: pa.Table) -> None:
        if not table.schema.equals(self.schema, check_metadata=False):
            raise ValueError(
                f"Table schema does not match schema used to create file: \ntable:\n{table.schema!s} "
                f"vs. \nfile:\n{self.schema!s}"
            )
        self.writer.write_table(table)

    def add_key_value_metadata(self, metadata: Mapping[str, str]) -> None:
        self.writer.add_key_value_metadata(metadata)

    def close(self) -> None:
        if self.is_open:
            self.is_open = False
            self.writer.close()


def write_parquet(table: pa.Table, path: Path, **options: Any) -> None:
    """``table`` as the Parquet file ``path``, as ``pyarrow.parquet.write_table`` writes it (options as
    its); a file left half-written by an error is removed."""
    try:
        writer = ParquetWriter(path, table.schema, **options)
        try:
            writer.write_table(table)
        finally:
            writer.close()
    except Exception:
        with contextlib.suppress(OSError):
            os.remove(path)
        raise


class ParquetFile:
    """The reads of a Parquet file a run makes, as ``pyarrow.parquet.ParquetFile`` makes them (see
    :class:`ParquetWriter`)."""

    def __init__(self, path: Path):
        self.reader = _parquet.ParquetReader()
        self.reader.open(str(path), arrow_extensions_enabled=True)

    @property
    def metadata(self) -> Any:
        return self.reader.metadata

    @property
    def schema_arrow(self) -> pa.Schema:
        return self.reader.schema_arrow

    def read(self, columns: list[str]) -> pa.Table:
        return self.reader.read_all(column_indices=[self.reader.column_name_idx(c) for c in columns])

    def iter_batches(self, batch_size: int) -> Any:
        return self.reader.iter_batches(batch_size, range(self.reader.num_row_groups))

    def close(self) -> None:
        self.reader.close()


def change_metadata(interval_ps: int, samples: int | None = None) -> dict[str, str]:
    """Parquet key-value metadata of a change-row table: ``cnsim.rows = changes``, the sample interval (ps)
    and, once the run is over, the number of samples (the instants are ``k · interval``, ``k < samples``)."""
    meta = {"cnsim.rows": "changes", "cnsim.sample_interval_ps": str(interval_ps)}
    if samples is not None:
        meta["cnsim.samples"] = str(samples)
    return meta


def column(value: Any) -> Any:
    """An engine column as numpy (``(dtype, array)``, read without a copy) or a list of names."""
    if isinstance(value, tuple):
        dtype, raw = value
        return np.frombuffer(raw, dtype=dtype)
    return value


def _index_type(n: int) -> tuple[pa.DataType, type]:
    """The width of a categorical's codes for ``n`` categories, as pandas chooses it."""
    for t, dtype in ((pa.int8(), np.int8), (pa.int16(), np.int16), (pa.int32(), np.int32)):
        if n < np.iinfo(dtype).max:
            return t, dtype
    return pa.int64(), np.int64


def _numbers(values: np.ndarray) -> pa.Array:
    """An Arrow array over a numeric numpy array's memory (``pa.array`` would import pandas)."""
    values = np.ascontiguousarray(values)
    return pa.Array.from_buffers(pa.from_numpy_dtype(values.dtype), len(values), [None, pa.py_buffer(values)])


def numbers_of(col: pa.ChunkedArray, dtype: type) -> np.ndarray:
    """A numeric column without nulls as a numpy array of ``dtype`` (its Arrow type's width), read
    from the buffers: pyarrow's ``to_numpy`` imports pandas."""
    parts = []
    for chunk in col.chunks:
        if chunk.null_count:
            raise ValueError("numbers_of: the column has missing values")
        offset = chunk.offset * np.dtype(dtype).itemsize
        parts.append(np.frombuffer(chunk.buffers()[1], dtype=dtype, count=len(chunk), offset=offset))
    return np.concatenate(parts) if parts else np.array([], dtype=dtype)


def _strings(values: list[str], large: bool = False) -> pa.Array:
    """An Arrow string array built from its buffers (``pa.array`` of Python objects imports pandas);
    ``large``: 64-bit offsets, as pandas' ``str`` columns are written."""
    data = [v.encode() for v in values]
    offsets = np.zeros(len(data) + 1, dtype=np.int64 if large else np.int32)
    np.cumsum([len(b) for b in data], out=offsets[1:])
    cls = pa.LargeStringArray if large else pa.StringArray
    return cls.from_buffers(len(data), pa.py_buffer(offsets), pa.py_buffer(b"".join(data)))


def _plain_column(values: list[Any]) -> pa.Array | None:
    """Python scalars of one kind as the Arrow column pandas would write for them (None: another case,
    left to pandas — missing values, mixed kinds, nested values)."""
    kinds = {type(v) for v in values}
    if kinds == {bool}:
        bits = np.packbits(np.array(values, dtype=bool), bitorder="little")
        return pa.Array.from_buffers(pa.bool_(), len(values), [None, pa.py_buffer(bits)])
    if kinds == {int} and all(-(2**63) <= v < 2**63 for v in values):
        return _numbers(np.array(values, dtype=np.int64))
    if kinds and kinds <= {int, float}:
        return _numbers(np.array(values, dtype=np.float64))
    if kinds == {str}:
        return _strings(values, large=True)
    return None


def summary_table(flat: Mapping[str, Any]) -> pa.Table | None:
    """The one-row summary table (``summary_row``) without pandas, or None if pandas must build it."""
    arrays = {k: _plain_column([v]) for k, v in flat.items()}
    return None if any(a is None for a in arrays.values()) else pa.table(arrays)


def flows_table(flows: Mapping[str, Any], per_flow: list[Mapping[str, Any]]) -> pa.Table | None:
    """``flows`` joined to the per-flow summary as ``frames_from_core`` does, without pandas; None when
    the rows differ in their keys or hold missing values (pandas then builds it)."""
    keys = list(per_flow[0]) if per_flow else []
    if (
        not per_flow
        or "id" not in keys
        or any(list(r) != keys for r in per_flow)
        or [r["id"] for r in per_flow] != list(range(len(column(flows["flow"]))))
    ):
        return None
    table = arrow_table({"flow": flows["flow"]}, Names(flows, "flow"))
    for k in keys:
        if k not in ("id", "src", "dst"):
            values = _plain_column([r[k] for r in per_flow])
            if values is None:
                return None
            table = table.append_column(k, values)
    return table


class Names:
    """The name columns of one id table (``queues``, ``flows``, ``links``) as dictionary columns."""

    def __init__(self, table: Mapping[str, Any], key: str):
        self.key = key
        self.columns: list[tuple[str, pa.DataType, pa.Array, np.ndarray]] = []
        self.size = 0
        for name, value in table.items():
            if name == key:
                self.size = len(column(value))
                continue
            values = list(value)
            categories = sorted(set(values))
            index_type, dtype = _index_type(len(categories))
            code_of = {c: i for i, c in enumerate(categories)}
            codes = np.array([code_of[v] for v in values], dtype=dtype)
            self.columns.append((name, pa.dictionary(index_type, pa.string()), _strings(categories), codes))

    def arrays(self, ids: np.ndarray) -> list[tuple[str, pa.Array]]:
        """The name columns for rows with these ids."""
        return [
            (name, pa.DictionaryArray.from_arrays(_numbers(codes[ids]), categories))
            for name, _, categories, codes in self.columns
        ]


def arrow_table(cols: Mapping[str, Any], names: Names | None) -> pa.Table:
    """Engine columns (numbers) joined to their names, as an Arrow table."""
    arrays = {c: _numbers(column(v)) for c, v in cols.items()}
    rows = len(next(iter(arrays.values()))) if arrays else 0
    if names is not None and names.size and rows:  # frames_from_core joins only non-empty tables
        arrays.update(names.arrays(column(cols[names.key])))
    return pa.table(arrays)


STATISTICS = ("t_s", "start_s")
"""Columns whose row groups carry min/max statistics: time, what a reader filters a series on (a
filtered scan skips the row groups outside its window). The others' statistics took 30 % of a
write of the default series (16 Ki flow_tp rows: 0.83 -> 0.59 ms)."""


def _encoding(schema: pa.Schema) -> dict[str, Any]:
    """Parquet dictionary encoding for the name columns only: on a numeric column of 128 Ki distinct
    values it would cost ~50 MB of resident memory per file for little gain; statistics for
    :data:`STATISTICS` only."""
    return {
        "use_dictionary": [f.name for f in schema if pa.types.is_dictionary(f.type)] or False,
        "write_statistics": [n for n in schema.names if n in STATISTICS] or False,
    }


def write_table(path: Path, cols: Mapping[str, Any], names: Names | None) -> None:
    """One engine table, joined to its names, as a Parquet file."""
    table = arrow_table(cols, names)
    write_parquet(table, path, **_encoding(table.schema))


class SeriesWriter:
    """The streamed tables of one run, each a Parquet file in ``folder`` written chunk by chunk."""

    def __init__(
        self,
        folder: Path,
        statics: Mapping[str, Mapping[str, Any]],
        sample_interval_ps: int,
        ideal: Any = None,
        node_names: list[str] | None = None,
    ):
        self.folder = folder
        self.interval = sample_interval_ps
        self.ideal = ideal  # slowdown.Ideal of the run: the fct rows get fct_s, ideal_s, slowdown
        self.statics = statics
        self._names: dict[str, Names] = {}  # per id table, built when a series first has rows
        self.node_names = node_names  # `fct.dst` (see dst_names)
        self._dst_names: Names | None = None
        self.writers: dict[str, ParquetWriter] = {}
        self.empty: dict[str, Mapping[str, Any]] = {}
        self.samples = 0
        # per sparse table and chunk: (first sample, samples, ids recorded); the ids only grow
        self.chunks: dict[str, list[tuple[int, int, np.ndarray]]] = {t: [] for t, s in SERIES.items() if s[2]}
        # rows a sparse table may rewrite during the run (see write): a fill costs the rows written so
        # far, so with one row of credit per row written the rewrites stay within the table's size
        self.credit = {t: CHUNK_ROWS for t in self.chunks}

    def dst_names(self) -> Names | None:
        """Each transfer's destination by name (``fct.dst``: its own, where its flow's is ``*``), built
        when the first ``fct`` rows come; None without the nodes' names."""
        if self._dst_names is None and self.node_names is not None:
            nodes = np.arange(len(self.node_names), dtype=np.uint32)
            self._dst_names = Names({"node": nodes, "dst": self.node_names}, "node")
        return self._dst_names

    def names(self, series: str) -> Names | None:
        """The name columns of a series' ids (None: a series without ids), built once per id table:
        ``rp_rate``, ``tcp_ts``, ``flow_tp`` and ``fct`` share the flows' (1 000 flows: 2.5 ms each)."""
        src, key, _ = SERIES[series]
        if src is None:
            return None
        if src not in self._names:
            self._names[src] = Names(self.statics[src], key)
        return self._names[src]

    def write(self, samples: int, tables: Mapping[str, Mapping[str, Any]]) -> None:
        """Append one drained chunk covering ``samples`` sample instants."""
        for name, (_, key, sparse) in SERIES.items():
            cols = tables[name]
            if sparse:
                ids = column(cols[key])
                per_sample = len(ids) // samples if samples else 0
                first = np.array(ids[:per_sample])  # every sample of a chunk has the same ids
                self._widen(name, first)
                self.chunks[name].append((self.samples, samples, first))
                self.credit[name] += len(ids)
            self._append(name, cols)
        self.samples += samples

    def _widen(self, name: str, ids: np.ndarray) -> None:
        """Before a chunk whose sparse series has more ids than the file's rows: fill the file's
        earlier chunks with the new ids' zeros now, on the writer thread while the engine runs, rather
        than once the run is over (:meth:`close`) — when the rewrite fits the credit. A fabric's queues
        mostly start within the first chunks, whose rows are few."""
        chunks, writer = self.chunks[name], self.writers.get(name)
        rows = sum(n * len(c) for _, n, c in chunks)
        if writer is None or not any(n and len(c) < len(ids) for _, n, c in chunks) or rows > self.credit[name]:
            return
        writer.close()
        self.writers[name] = self._fill(name, chunks, ids, keep_open=True)
        self.chunks[name] = [(k0, n, ids) for k0, n, _ in chunks]
        self.credit[name] -= rows

    def _append(self, name: str, cols: Mapping[str, Any]) -> None:
        empty = not cols or len(column(next(iter(cols.values())))) == 0
        table = arrow_table(cols, None if empty else self.names(name))
        if table.num_rows == 0:
            if name not in self.empty and name not in self.writers:
                # its file as it stays if no row ever comes (a writer opened later replaces it):
                # written now, beside the engine, rather than after it stops
                write_table(self.folder / f"{name}.parquet", cols, None)
            self.empty.setdefault(name, cols)
            return
        if name == "fct" and (dst_names := self.dst_names()) is not None and "dst" in table.column_names:
            [(_, dst)] = dst_names.arrays(column(cols["dst_node"]))
            table = table.set_column(table.column_names.index("dst"), "dst", dst)
        if name == "fct" and self.ideal is not None:
            extra = self.ideal.columns(
                *(
                    column(cols[c])
                    for c in ("flow", "dst_node", "frames", "bytes", "completed", "bad", "start_s", "end_s")
                )
            )
            for c, values in extra.items():
                table = table.append_column(c, _numbers(values))
        writer = self.writers.get(name)
        if writer is None:
            schema = table.schema
            if name in CHANGE_ROWS:
                schema = schema.with_metadata({**(schema.metadata or {}), **change_metadata(self.interval)})
                table = table.replace_schema_metadata(schema.metadata)
            writer = self.writers[name] = ParquetWriter(self.folder / f"{name}.parquet", schema, **_encoding(schema))
        elif name in CHANGE_ROWS:
            table = table.replace_schema_metadata(writer.schema.metadata)
        writer.write_table(table)

    def close(self) -> None:
        """Close every file (a table that never had a row is written empty) and fill in the zeros of
        sparse series that started after the first chunks."""
        for name, writer in self.writers.items():
            if name in CHANGE_ROWS:  # the grid is known now
                writer.add_key_value_metadata({"cnsim.samples": str(self.samples)})
            writer.close()
        for name in SERIES:
            if name not in self.writers and name not in self.empty:  # never handed over (an empty one is written)
                raise RuntimeError(f"internal error: no rows nor columns of {name} reached the writer")
        for name, chunks in self.chunks.items():
            if name in self.writers:
                final = max((ids for _, n, ids in chunks if n), key=len, default=np.array([], np.uint32))
                if any(n and len(ids) < len(final) for _, n, ids in chunks):
                    self._fill(name, chunks, final)

    def abort(self) -> None:
        """Close the files of an interrupted run (its folder is then removed)."""
        for writer in self.writers.values():
            if writer.is_open:
                writer.close()

    def _fill(
        self, name: str, chunks: list[tuple[int, int, np.ndarray]], final: np.ndarray, keep_open: bool = False
    ) -> Any:
        """Rewrite a sparse series' file with every chunk's rows widened to the ids ``final`` (zeros
        for the ids a chunk lacks); with ``keep_open``, return the new file's writer, open."""
        _, key, value = SERIES[name]
        path = self.folder / f"{name}.parquet"
        partial = self.folder / f".{name}.partial.parquet"
        os.replace(path, partial)
        source = _Rows(ParquetFile(partial))
        writer = None
        for k0, n, ids in chunks:
            if n == 0:
                continue
            old = source.take(n * len(ids))
            col = old.column(value)
            recorded = numbers_of(col, np.uint64 if col.type == pa.uint64() else np.uint32)
            values = np.zeros((n, len(final)), dtype=recorded.dtype)
            if len(ids):
                values[:, np.searchsorted(final, ids)] = recorded.reshape(n, len(ids))
            # the engine samples at k · interval and converts ps to s as ps / 1e12 (time.rs: to_s)
            t = (np.arange(k0, k0 + n, dtype=np.uint64) * np.uint64(self.interval)).astype(np.float64) / 1e12
            cols = {"t_s": np.repeat(t, len(final)), key: np.tile(final, n), value: values.reshape(-1)}
            table = arrow_table(cols, self.names(name))
            if writer is None:
                writer = ParquetWriter(path, table.schema, **_encoding(table.schema))
            writer.write_table(table)
        source.close()
        partial.unlink()
        if writer is not None and not keep_open:
            writer.close()
        return writer


class _Rows:
    """Rows of a Parquet file taken in order, any number at a time."""

    def __init__(self, f: ParquetFile):
        self.file = f
        self.batches = f.iter_batches(batch_size=1 << 16)
        self.buffer: pa.RecordBatch | None = None

    def take(self, n: int) -> pa.Table:
        parts = []
        while n > 0:
            if self.buffer is None or self.buffer.num_rows == 0:
                self.buffer = next(self.batches)
            part = self.buffer.slice(0, n)
            self.buffer = self.buffer.slice(part.num_rows)
            parts.append(part)
            n -= part.num_rows
        return pa.Table.from_batches(parts, schema=self.file.schema_arrow)

    def close(self) -> None:
        self.file.close()


WARM_UP: Any = object()
"""The item that asks the writer thread for its warm-up write."""


def warm_up() -> None:
    """Write a two-row table with a name column as Parquet into memory: pyarrow's first write in a
    process costs a few milliseconds more than the next (code paged in, lazy set-up), paid here while
    the engine fills its first batch rather than when it is waiting on the writer."""
    names = pa.DictionaryArray.from_arrays(_numbers(np.zeros(2, dtype=np.int8)), _strings(["a"]))
    table = pa.table({"t_s": _numbers(np.zeros(2)), "queue": names})
    writer = ParquetWriter(pa.BufferOutputStream(), table.schema, **_encoding(table.schema))
    writer.write_table(table)
    writer.close()


class Background:
    """Writes the drained batches of a run in a thread of its own while the engine goes on: the engine
    runs with the GIL released and pyarrow encodes and compresses with it released, so on two cores
    the writing overlaps the simulation. At most ``depth`` batches wait: when the writer falls behind,
    the engine waits for it (memory stays bounded). An error in the writer is raised in the caller at
    its next hand-over.

    The thread is started before the engine is built, which it does with the GIL released, and
    without waiting for the thread to run (``threading.Thread.start`` waits until the new thread has
    taken the GIL once: 0.1-0.3 ms of ``wall_s``); the writer is given to it (:meth:`attach`) before
    the first batch."""

    def __init__(self, writer: "SeriesWriter | None" = None, depth: int = 2):
        self.writer = writer
        self.batches: Any = queue.Queue(maxsize=depth)
        self.error: BaseException | None = None
        self.close = False  # set by end(): the thread closes the files after the last batch
        self.stopping = False  # set by stop(): the thread ends after the batches handed over
        self.running = _thread.allocate_lock()  # held by the thread until it ends
        self.running.acquire()
        _thread.start_new_thread(self._work, ())

    def attach(self, writer: "SeriesWriter") -> None:
        """The writer of the batches to come."""
        self.writer = writer

    def _work(self) -> None:
        try:
            self._write_batches()
        finally:
            self.running.release()

    def _write_batches(self) -> None:
        while (batch := self.batches.get()) is not None:
            if batch is WARM_UP:
                # only a head start: if pyarrow cannot write, the first batch says so to the caller
                with contextlib.suppress(Exception):
                    warm_up()
            elif self.error is None:
                try:
                    self.writer.write(*batch)  # type: ignore[union-attr]
                except BaseException as exc:  # noqa: BLE001 — raised in the caller
                    self.error = exc
        if self.close and self.error is None:
            try:
                self.writer.close()  # type: ignore[union-attr]
            except BaseException as exc:  # noqa: BLE001 — raised in the caller
                self.error = exc

    def warm_up(self) -> None:
        """Have the thread make its warm-up write (:func:`warm_up`) now: called as the engine starts, so
        that the thread takes the GIL when the engine lets it go. Started at once, the thread would hold
        it for the warm-up's Python parts while the caller waits (up to the 5-ms switch interval)."""
        self.batches.put(WARM_UP)

    def put(self, batch: tuple[int, Mapping[str, Mapping[str, Any]]]) -> None:
        if self.error is not None:
            raise self.error
        self.batches.put(batch)

    def end(self) -> None:
        """No batch follows: the thread closes the files once the last is written (the caller goes on;
        :meth:`finish` waits)."""
        if self.error is not None:
            raise self.error
        self.close = True
        self.batches.put(None)

    def finish(self) -> None:
        """Wait until every batch is written (and the files closed, after :meth:`end`)."""
        self.stop()
        if self.error is not None:
            raise self.error

    def stop(self) -> None:
        """Wait for the thread to end (asked to, unless :meth:`end` did)."""
        if self.running.locked():
            if not self.close and not self.stopping:
                self.stopping = True  # one end of the queue, should stop be called again
                self.batches.put(None)
            with self.running:
                pass


PROGRESS_S = 0.1
"""Wall seconds between two looks of the caller at the run (progress, Ctrl-C) when no batch fills."""


def run(
    engine: Any,
    ir_json: str,
    folder: Path,
    progress: Callable[[float], None] | None = None,
    chunk_rows: int | None = None,
    ir: Mapping[str, Any] | None = None,
) -> tuple[str, dict[str, Mapping[str, Any]]]:
    """Run the IR, streaming the series and FCT rows into ``folder``; ``(summary JSON, the other
    tables)``.

    ``ir``: the IR ``ir_json`` encodes, if the caller has it (not parsed again). The engine runs until
    a batch of rows is buffered (``FIRST_ROWS``, doubling up to ``CHUNK_ROWS``; checked every ``STEP_SAMPLES`` sample
    intervals, at most 1/200 of the run), hands them over, and goes on while a :class:`Background`
    thread writes them. At the end the thread writes the last rows (``close_series``) and closes the
    files while the engine builds the summary. The other tables (``flows``, ``queues``, ...) are
    returned, not written.
    """
    limit = CHUNK_ROWS if chunk_rows is None else chunk_rows

    background = Background()  # its thread starts while the engine is built
    try:
        sim = engine.Simulation(ir_json)
        statics = sim.static_tables()
        ir = ir if ir is not None else json.loads(ir_json)
        writer = SeriesWriter(folder, statics, sim.sample_interval_ps, Ideal(ir), [n["name"] for n in ir["nodes"]])
    except BaseException:
        background.stop()
        raise
    background.attach(writer)
    step = max(1, sim.duration_ps // 200)
    if sim.sample_interval_ps:
        step = min(step, STEP_SAMPLES * sim.sample_interval_ps)
    batch = min(limit, FIRST_ROWS)
    tail = sim.duration_ps - sim.duration_ps // TAIL  # the rows buffered by then are handed over there
    background.warm_up()
    try:
        while True:
            done = sim.run_batch(tail if sim.now_ps < tail else sim.duration_ps, step, batch, PROGRESS_S)
            full = sim.buffered_rows() >= batch
            if not done and (full or (sim.now_ps == tail and sim.buffered_rows())):
                background.put(sim.drain_series())
                batch = min(limit, 2 * batch) if full else batch
            capture.write(sim, folder)  # packet traces (observe.pcap)
            if progress is not None:
                progress(sim.now_ps / 1e12)
            if done:
                break
        writing = getattr(progress, "writing", None)  # e.g. the CLI's reporter: a line for the write phase
        if writing is not None:
            writing()
        # the last rows go to the writer, which then closes the files while the engine builds the summary
        background.put(sim.close_series())
        background.end()
        summary_json, _, tables = sim.finish()
        capture.write(sim, folder)
        if any(len(column(next(iter(tables[name].values())))) for name in SERIES if tables.get(name)):
            raise RuntimeError("internal error: the engine returned series rows after close_series")
        background.finish()
    except BaseException:
        background.stop()
        writer.abort()
        raise
    return summary_json, {k: v for k, v in tables.items() if k not in SERIES}
