"""Streamed outputs (issue 10): a run with ``out`` writes its time series to Parquet chunk by chunk.

The files must hold exactly what an in-memory run saves (same columns, rows, types, categories), the
engine must hold a bounded number of rows whatever the run's length, and an interrupted run must
leave nothing behind.
"""

import json

import cnsim
import pandas as pd
import pyarrow.parquet as pq
import pytest
from cnsim.exceptions import RunInterrupted
from cnsim.results import stream
from cnsim.results.result import TABLES, indented_json, read_table
from conftest import ROOT, needs_core
from hypothesis import given, settings
from hypothesis import strategies as st

pytestmark = needs_core
SC = ROOT / "scenarios"
CASES = {
    # queue_ts only; the bottleneck is active from the first chunk
    "fan-in-4": (SC / "baseline/fan-in-4.toml", {"run.duration": "3ms"}),
    # hotspot from 0.4 ms and selective PAUSE: queues and paused links start in later chunks
    "cnsim-1hop-pause": (
        SC / "seed-003/cnsim-1hop-none-hs0.5-pause.toml",
        {"run.duration": "2ms", "hotspot.0.start": "0.4ms", "hotspot.0.end": "1.6ms"},
    ),
    # RP rates (rp_rate) and FCT rows
    "dcqcn": (SC / "seed-003/cnsim-1hop-dcqcn-hs0.5-pause.toml", {"run.duration": "2ms", "hotspot.0.start": "0.3ms"}),
    # TCP windows (tcp_ts)
    "tcp": (SC / "baseline/tcp-newreno-4.toml", {"run.duration": "3ms", "run.warmup": 0}),
}


@pytest.fixture
def small_chunks(monkeypatch):
    """Drain every 100 rows and look at the buffer every 7 samples: many chunks even in short runs."""
    monkeypatch.setattr(stream, "CHUNK_ROWS", 100)
    monkeypatch.setattr(stream, "STEP_SAMPLES", 7)
    fills = []
    fill = stream.SeriesWriter._fill

    def counting(self, name, chunks, final, **kw):
        fills.append(name)
        return fill(self, name, chunks, final, **kw)

    monkeypatch.setattr(stream.SeriesWriter, "_fill", counting)
    return fills


def _same_files(a, b, names):
    for name in names:
        fa, fb = pq.ParquetFile(a / f"{name}.parquet"), pq.ParquetFile(b / f"{name}.parquet")
        assert fa.schema_arrow.remove_metadata() == fb.schema_arrow.remove_metadata(), name
        da, db = pd.read_parquet(a / f"{name}.parquet"), pd.read_parquet(b / f"{name}.parquet")
        if name == "summary":
            da, db = da.drop(columns="wall_s"), db.drop(columns="wall_s")
        pd.testing.assert_frame_equal(da, db, check_exact=True, obj=name)
        for col in da.select_dtypes("category"):
            assert list(da[col].cat.categories) == list(db[col].cat.categories), (name, col)


@pytest.mark.parametrize("case", CASES, ids=list(CASES))
def test_streamed_files_equal_the_in_memory_ones(case, tmp_path, small_chunks):
    path, overrides = CASES[case]
    memory = cnsim.run(path, seed=3, overrides=overrides)
    memory.save(tmp_path / "memory", plots=False)
    streamed = cnsim.run(path, seed=3, overrides=overrides, out=tmp_path / "streamed", plots=False)
    _same_files(tmp_path / "memory", tmp_path / "streamed", [*TABLES, "summary"])
    mem_summary = {k: v for k, v in memory.summary.items() if k != "wall_s"}
    assert mem_summary == {k: v for k, v in streamed.summary.items() if k != "wall_s"}
    # the Result of a streamed run reads its tables from the folder
    pd.testing.assert_frame_equal(streamed.tables["queue_ts"], memory.tables["queue_ts"], check_exact=True)
    assert pq.ParquetFile(tmp_path / "streamed" / "queue_ts.parquet").metadata.num_row_groups > 1
    # the throughput bins are drained with the series, as they become final
    assert pq.ParquetFile(tmp_path / "streamed" / "flow_tp.parquet").metadata.num_row_groups > 1
    assert pq.ParquetFile(tmp_path / "streamed" / "throughput_ts.parquet").metadata.num_row_groups > 1
    if case == "cnsim-1hop-pause":  # a queue that started late was filled in with its zeros
        assert set(small_chunks) == {"queue_ts"}
        assert (memory.tables["pause_ts"]["paused"] == 1).any()
    if case == "dcqcn":
        assert len(memory.tables["rp_rate"]) > 0 and len(memory.tables["fct"]) > 0
    if case == "tcp":
        assert len(memory.tables["tcp_ts"]) > 0


@pytest.mark.parametrize("case", ["dcqcn", "cnsim-1hop-pause"])
def test_change_rows_read_back_as_every_sample(case, tmp_path, small_chunks):
    """``rp_rate`` and ``pause_ts`` are written as change rows (a series' value where it differs from its
    previous sample's; every flow's first rate), their files marked so with the sample grid; read_table and a
    Result's tables give every series at every sample: the last change at or before it, 0 before the first."""
    import numpy as np

    path, overrides = CASES[case]
    r = cnsim.run(path, seed=3, overrides=overrides, out=tmp_path / "r", plots=False)
    for name, (key, value) in stream.CHANGE_ROWS.items():
        f = tmp_path / "r" / f"{name}.parquet"
        changes = pd.read_parquet(f)
        if changes.empty:
            assert name == "rp_rate" and case == "cnsim-1hop-pause" and read_table(f).empty
            continue
        meta = pq.read_metadata(f).metadata
        assert meta[b"cnsim.rows"] == b"changes"
        iv, samples = int(meta[b"cnsim.sample_interval_ps"]), int(meta[b"cnsim.samples"])
        assert samples == 200  # 2 ms of 10 us
        ids = sorted(changes[key].unique())
        # a forward fill over the grid, one sample at a time
        state, names, rows, i = dict.fromkeys(ids, 0), {}, [], 0
        for k in range(samples):
            t = float(np.uint64(k) * np.uint64(iv)) / 1e12
            while i < len(changes) and changes["t_s"].iat[i] == t:
                row = changes.iloc[i]
                assert row[value] != state[row[key]] or k == 0, "a row that changes nothing"
                state[row[key]] = row[value]
                names.setdefault(row[key], row)
                i += 1
            rows += [(t, j, state[j]) for j in ids]
        assert i == len(changes)
        dense = read_table(f)
        assert len(dense) == len(rows) > len(changes)
        want = pd.DataFrame(rows, columns=["t_s", key, value])
        for c in ("t_s", key, value):
            np.testing.assert_array_equal(dense[c].to_numpy(), want[c].to_numpy().astype(dense[c].dtype), err_msg=c)
        for c in dense.columns.difference(["t_s", key, value]):  # names: those of the id
            assert list(dense[c].astype(str)) == [str(names[j][c]) for _, j, _ in rows]
            assert list(dense[c].cat.categories) == list(changes[c].cat.categories)
        pd.testing.assert_frame_equal(r.tables[name], dense, check_exact=True)
        pd.testing.assert_frame_equal(cnsim.Result.load(tmp_path / "r").tables[name], dense, check_exact=True)
    # the engine's in-memory tables (docs/engine-contract.md) through frames_from_core: the same
    from cnsim import api
    from cnsim.results.result import frames_from_core

    summary_json, tables = api.core().run(json.dumps(api.compile_ir_once(api.resolve(path, 3, overrides))), None, 0)
    assert "series_grid" in tables
    frames = frames_from_core(tables, json.loads(summary_json))
    for name in stream.CHANGE_ROWS:
        pd.testing.assert_frame_equal(frames[name], r.tables[name], check_exact=True)


def test_default_chunks_equal_small_chunks(tmp_path, monkeypatch):
    path, overrides = CASES["cnsim-1hop-pause"]
    cnsim.run(path, seed=5, overrides=overrides, out=tmp_path / "default", plots=False)
    monkeypatch.setattr(stream, "CHUNK_ROWS", 1000)
    monkeypatch.setattr(stream, "STEP_SAMPLES", 3)
    cnsim.run(path, seed=5, overrides=overrides, out=tmp_path / "small", plots=False)
    for name in stream.SERIES:  # the same series and FCT rows whatever the chunking (NaN = NaN)
        pd.testing.assert_frame_equal(
            pd.read_parquet(tmp_path / "default" / f"{name}.parquet"),
            pd.read_parquet(tmp_path / "small" / f"{name}.parquet"),
            check_exact=True,
            obj=name,
        )
    manifest = [json.loads((tmp_path / d / "manifest.json").read_text())["files"] for d in ("default", "small")]
    for name in ("flows.parquet", "queue_cdf.parquet"):  # written whole at the end
        assert manifest[0][name] == manifest[1][name]


def _max_buffered(duration_ms: int, limit: int, step_samples: int) -> tuple[int, int]:
    """Largest number of rows the engine held while being drained as ``stream.run`` does, and the
    number of drains."""
    path, overrides = CASES["cnsim-1hop-pause"]
    sc = cnsim.load_scenario(
        path, overrides={**overrides, "run.duration": f"{duration_ms}ms", "hotspot.0.end": f"{duration_ms}ms"}
    )
    from cnsim import _core
    from cnsim.compile.compiler import compile_ir

    sim = _core.Simulation(json.dumps(compile_ir(sc)))
    step = step_samples * sim.sample_interval_ps
    most, drains, done = 0, 0, False
    while not done:
        done = sim.run_until(sim.now_ps + step)
        most = max(most, sim.buffered_rows())
        if sim.buffered_rows() >= limit and not done:
            buffered = sim.buffered_rows()
            samples, tables = sim.drain_series()
            rows = sum(len(stream.column(next(iter(t.values())))) for t in tables.values())
            assert rows == buffered  # what was counted as buffered is what came out
            assert sim.buffered_rows() == 0
            drains += 1
    return most, drains


def test_engine_buffer_does_not_grow_with_the_run():
    short, n_short = _max_buffered(2, limit=2000, step_samples=10)
    long, n_long = _max_buffered(8, limit=2000, step_samples=10)
    assert n_long > n_short >= 1
    # one step (10 samples of 10 us) beyond the limit at most: 12 switch ports and 22 links per sample,
    # one 100-us bin of 16 flows + the aggregate, and the transfers settled in 100 us (each at least
    # one 1.2-us frame of one of 10 hosts: at most 840): the bound holds for any duration
    step = 10 * (12 + 22) + 17 + 840
    assert long <= 2000 + step
    assert long <= short + step


def test_an_interrupted_streamed_run_leaves_nothing(tmp_path):
    def stop(sim_s):
        if sim_s > 0.001:
            raise KeyboardInterrupt

    with pytest.raises(RunInterrupted):
        cnsim.run(SC / "baseline/fan-in-4.toml", overrides={"run.duration": "5ms"}, out=tmp_path / "out", progress=stop)
    assert list(tmp_path.iterdir()) == []


def test_an_interrupted_run_keeps_the_previous_result(tmp_path):
    out = tmp_path / "out"
    cnsim.run(SC / "baseline/fan-in-4.toml", overrides={"run.duration": "1ms"}, out=out, plots=False)
    before = (out / "manifest.json").read_text()

    def stop(sim_s):
        raise KeyboardInterrupt

    with pytest.raises(RunInterrupted):
        cnsim.run(SC / "baseline/fan-in-4.toml", overrides={"run.duration": "5ms"}, out=out, progress=stop)
    assert (out / "manifest.json").read_text() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


@pytest.mark.parametrize("case", CASES, ids=list(CASES))
def test_tables_built_without_pandas_equal_the_pandas_ones(case, tmp_path):
    import pyarrow as pa
    from cnsim.results.result import _write_parquet, flat_summary, summary_row

    path, overrides = CASES[case]
    r = cnsim.run(path, seed=2, overrides=overrides)
    fast = stream.summary_table(flat_summary(r.summary))
    slow = pa.Table.from_pandas(summary_row(r.summary), preserve_index=False)
    assert fast is not None
    assert fast.schema == slow.schema.remove_metadata()
    pd.testing.assert_frame_equal(fast.to_pandas(), summary_row(r.summary), check_exact=True)
    from cnsim import _core
    from cnsim.compile.compiler import compile_ir

    names = _core.Simulation(json.dumps(compile_ir(cnsim.load_scenario(path, overrides=overrides)))).static_tables()
    flows = stream.flows_table(names["flows"], r.summary["flows"])
    if flows is None:  # only rows with missing values (a TCP flow without an RTT sample) need pandas
        assert case == "tcp" and any(v is None for f in r.summary["flows"] for v in f.values())
        return
    pd.testing.assert_frame_equal(flows.to_pandas(), r.tables["flows"], check_exact=True)
    _write_parquet(r.tables["flows"], tmp_path / "flows.parquet")  # as Result.save writes it
    assert flows.schema == pq.ParquetFile(tmp_path / "flows.parquet").schema_arrow.remove_metadata()


def test_parquet_without_pyarrow_parquet_is_byte_for_byte_its(tmp_path):
    """stream's ParquetWriter and write_parquet (pyarrow's engine without pyarrow.parquet, which a run does
    not import) write the bytes pyarrow.parquet writes, with the run's options and with pyarrow's defaults;
    ParquetFile reads back what pyarrow.parquet.ParquetFile reads."""
    path, overrides = CASES["dcqcn"]
    cnsim.run(path, seed=2, overrides=overrides, out=tmp_path / "run")
    files = sorted((tmp_path / "run").glob("*.parquet"))
    assert len(files) >= 10
    for f in files:
        t = pq.read_table(f)
        for options in ({}, stream._encoding(t.schema)):
            pq.write_table(t, tmp_path / "a.parquet", **options)
            stream.write_parquet(t, tmp_path / "b.parquet", **options)
            assert (tmp_path / "a.parquet").read_bytes() == (tmp_path / "b.parquet").read_bytes()
            ours = stream.ParquetWriter(tmp_path / "b.parquet", t.schema, **options)
            with pq.ParquetWriter(tmp_path / "a.parquet", t.schema, **options) as theirs:
                for w in (theirs, ours):
                    w.write_table(t)
                    w.write_table(t)
                    w.add_key_value_metadata({"cnsim.samples": "7"})
            ours.close()
            assert (tmp_path / "a.parquet").read_bytes() == (tmp_path / "b.parquet").read_bytes()
        theirs, ours = pq.ParquetFile(f), stream.ParquetFile(f)
        assert ours.schema_arrow == theirs.schema_arrow and ours.metadata.num_rows == theirs.metadata.num_rows
        columns = t.column_names[:2]
        pd.testing.assert_frame_equal(ours.read(columns).to_pandas(), theirs.read(columns=columns).to_pandas())
        batches = [b.to_pandas() for b in ours.iter_batches(100)]
        assert len(batches) == len(list(theirs.iter_batches(batch_size=100)))
        pd.testing.assert_frame_equal(
            pd.concat(batches, ignore_index=True) if batches else t.to_pandas(), t.to_pandas()
        )
        ours.close()


def test_the_api_streams_its_tables_and_removes_them_with_the_result():
    """Without `out` the API writes the same Parquet into a temporary folder, reads a table when it is
    asked for, and the folder goes with the last reference to the tables."""
    import gc

    r = cnsim.run(SC / "baseline/fan-in-4.toml", overrides={"run.duration": "2ms"})
    folder = r.tables.folder
    assert {p.name for p in folder.iterdir()} >= {f"{n}.parquet" for n in TABLES}
    assert len(r.tables["queue_ts"]) > 0 and r.summary["wall_s"] > 0
    del r
    gc.collect()
    assert not folder.exists()


def test_an_error_in_the_writer_thread_reaches_the_caller(tmp_path, monkeypatch):
    """The batches are written in a thread: its failure stops the run, with nothing left behind."""

    def broken(self, samples, tables):
        raise OSError("disk full")

    monkeypatch.setattr(stream, "CHUNK_ROWS", 100)
    monkeypatch.setattr(stream.SeriesWriter, "write", broken)
    with pytest.raises(OSError, match="disk full"):
        cnsim.run(SC / "baseline/fan-in-4.toml", overrides={"run.duration": "3ms"}, out=tmp_path / "r")
    assert not (tmp_path / "r").exists()
    assert [p for p in tmp_path.iterdir()] == []


def test_queues_that_start_late_are_filled_in_during_the_run_within_the_credit(tmp_path, monkeypatch):
    """A queue first seen in a later chunk: the file's earlier rows get its zeros when that chunk is
    written, if the rewrite fits the credit (one row per row written, CHUNK_ROWS to start); otherwise
    once the run is over. Either way the file holds every queue at every sample, in time order."""
    import numpy as np

    monkeypatch.setattr(stream, "CHUNK_ROWS", 1)
    names = {"queue": np.arange(3, dtype=np.uint32), "switch": ["s", "s", "s"], "port": ["p0", "p1", "p2"]}
    statics = {"queues": names, "flows": {"flow": np.zeros(0, np.uint32)}, "links": {"link": np.zeros(0, np.uint32)}}
    writer = stream.SeriesWriter(tmp_path, statics, 10)
    nothing = {"t_s": np.zeros(0)}

    def chunk(k0, n, ids):
        t = np.repeat(np.arange(k0, k0 + n) * 10 / 1e12, len(ids))
        rows = {"t_s": t, "queue": np.tile(np.array(ids, np.uint32), n), "bytes": np.full(n * len(ids), 7, np.uint64)}
        return n, {name: rows if name == "queue_ts" else nothing for name in stream.SERIES}

    writer.write(*chunk(0, 2, [0]))  # 2 rows
    writer.write(*chunk(2, 1, [0, 1]))  # queue 1 starts: the file's 2 rows are rewritten now (credit 1 + 2)
    assert [len(ids) for _, _, ids in writer.chunks["queue_ts"]] == [2, 2]
    assert writer.credit["queue_ts"] == 1 + 2 - 2 + 2
    writer.write(*chunk(3, 3, [0, 1]))
    writer.write(*chunk(6, 1, [0, 1, 2]))  # queue 2: the file's 12 rows exceed the credit, 3 + 6: left to close()
    assert [len(ids) for _, _, ids in writer.chunks["queue_ts"]] == [2, 2, 2, 3]
    writer.close()
    got = pd.read_parquet(tmp_path / "queue_ts.parquet")
    assert list(got["t_s"]) == [k * 10 / 1e12 for k in range(7) for _ in range(3)]
    assert list(got["port"].astype(str)) == ["p0", "p1", "p2"] * 7
    seen = {0: 0, 1: 2, 2: 6}  # sample from which each queue is recorded
    assert list(got["bytes"]) == [7 if k >= seen[q] else 0 for k in range(7) for q in range(3)]


@pytest.mark.timeout(60)
def test_a_failed_warm_up_leaves_the_writer_thread_working(tmp_path, monkeypatch):
    """The warm-up write is a head start only: when it fails, the run's batches are still written
    (the thread must not die with it, or the engine would wait on a full queue for ever)."""

    def broken():
        raise OSError("no Parquet today")

    monkeypatch.setattr(stream, "warm_up", broken)
    path, overrides = CASES["fan-in-4"]
    r = cnsim.run(path, seed=3, overrides=overrides, out=tmp_path / "r", plots=False)
    assert len(r.tables["queue_ts"]) > 0


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=30,
)


@settings(max_examples=300, deadline=None)
@given(JSON_VALUES)
def test_indented_json_is_byte_for_byte_pythons(value):
    """summary.json and manifest.json are laid out by the engine extension from the C encoder's
    compact text: the same bytes as ``json.dumps(indent=2, sort_keys=True)`` for any value (strings
    holding separators, brackets, quotes, escapes and non-ASCII; empty containers; NaN and infinities)."""
    assert indented_json(value) == json.dumps(value, indent=2, sort_keys=True)


def test_summary_json_is_pythons_layout(tmp_path):
    """A run's summary.json is its summary laid out as ``json.dumps(indent=2, sort_keys=True)``."""
    r = cnsim.run(SC / "baseline/fan-in-4.toml", overrides={"run.duration": "1ms"}, out=tmp_path / "o", plots=False)
    text = (tmp_path / "o" / "summary.json").read_text()
    assert text == json.dumps(r.summary, indent=2, sort_keys=True) + "\n"
