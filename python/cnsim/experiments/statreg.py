"""Statistical regression: did a change that is *meant* to alter trajectories (a new
event, a re-mapped random stream) leave the statistics of the model unchanged?

Such a change breaks the golden traces and the fingerprints by design, so equality of runs can no
longer be the check. Instead each reference metric is sampled over R independent replications
before and after the change (``R ≥ 20``, disjoint seeds), and two tests ask whether the samples could
come from the same distribution: Welch's t-test on the mean (no equal-variance assumption) and
Levene's test on the spread in its Brown–Forsythe form (deviations from the median: robust to the
skewed, heavy-tailed metrics of bursty traffic, where the F-test is not). All the tests of one check
form one family: Holm's step-down correction keeps the chance of flagging any metric of an unchanged
model at or below α (0.01), whatever the number of metrics and however they are correlated.

Workflow (``tools/statreg.py``): ``record`` the samples with the old build into a JSON file, then
``check`` that file with the new build. See docs/statreg.md.
"""

from __future__ import annotations

import json
import math
import re
import time
import warnings
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from cnsim import api
from cnsim.exceptions import ConfigError

SCENARIOS = Path(__file__).resolve().parents[3] / "scenarios"
FORMAT = "cnsim-statreg/1"
ALPHA = 0.01


@dataclass(frozen=True)
class Case:
    """One reference scenario: a shipped scenario (path relative to ``scenarios/``) shortened by
    ``overrides``, and the summary metrics sampled from it (paths of :func:`metric`)."""

    name: str
    scenario: str
    overrides: dict[str, Any]
    metrics: tuple[str, ...]


REFERENCE: tuple[Case, ...] = (
    # Drop-tail fan-in of 100 Bernoulli sources with QCN: buffer overflow, CNM feedback, fair sharing.
    Case(
        "fan-in-100-qcn",
        "seed-001/fan-in-100-qcn.toml",
        {"run.duration": "15ms"},
        ("frames.dropped", "control.generated", "fairness.jain", "queues[switch=cs,port=ep0].mean_bytes"),
    ),
    # Multi-stage network with an output-generated hotspot under BCN (BCN-MAX): hotspot queue, drops,
    # the victim traffic crossing e3 -> s0.
    Case(
        "og-multistage-bcn",
        "seed-004/og-multistage-bcn.toml",
        {"run.duration": "15ms", "hotspot.0.start": "1ms", "hotspot.0.end": "15ms"},
        (
            "frames.delivered",
            "frames.dropped",
            "fairness.jain",
            "queues[switch=e3,port=n7].mean_bytes",
            "queues[switch=e3,port=s0].mean_bytes",
        ),
    ),
    # Closed-loop Pareto ON/OFF transfers on one switch with selective PAUSE, a hotspot and DCQCN:
    # flow completion times, CNPs, PAUSE frames.
    Case(
        "cnsim-1hop-dcqcn",
        "seed-003/cnsim-1hop-dcqcn-hs0.5-pause.toml",
        {"run.duration": "10ms", "hotspot.0.start": "2ms", "hotspot.0.end": "8ms"},
        (
            "fct.count",
            "fct.mean_us",
            "control.generated",
            "pause.frames_sent",
            "fairness.jain",
            "queues[switch=sw1,port=h1].mean_bytes",
        ),
    ),
)
"""The default reference set: three short runs (≈ 0.1 s each) of different mechanisms whose metrics
vary from seed to seed (a metric that never varies carries no statistical information)."""


def metric(summary: Mapping[str, Any], path: str) -> float:
    """The number at ``path`` in a run summary: dotted keys (``fct.mean_us``), and a list element
    chosen by its fields in brackets (``queues[switch=sw1,port=h1].mean_bytes``) since list
    positions are not stable names. A ConfigError if the path does not lead to exactly one number."""
    node: Any = summary
    for part in re.findall(r"[^.\[]+(?:\[[^\]]*\])?", path):
        key, _, selector = part.partition("[")
        if not isinstance(node, Mapping) or key not in node:
            raise ConfigError.single(path, f"no key {key!r} in the run summary")
        node = node[key]
        if selector:
            want = dict(item.split("=", 1) for item in selector.rstrip("]").split(","))
            hits = [x for x in node if all(str(x.get(k)) == v for k, v in want.items())]
            if len(hits) != 1:
                raise ConfigError.single(path, f"{len(hits)} elements of {key!r} match [{selector}")
            node = hits[0]
    if isinstance(node, bool) or not isinstance(node, (int, float)):
        raise ConfigError.single(path, "not a number in the run summary", node)
    return float(node)


@dataclass
class Samples:
    """Metric values of R replications: ``values["case:metric"]`` holds one value per seed of ``seeds``.
    ``overrides`` were applied to every case on top of its own; ``build`` is the engine's
    ``git describe`` (which build the samples came from)."""

    cases: tuple[Case, ...]
    seeds: list[int]
    values: dict[str, list[float]]
    overrides: dict[str, Any] = field(default_factory=dict)
    build: str = ""

    @classmethod
    def check_target(cls, path: str | Path) -> None:
        """A ConfigError unless ``path`` may receive samples: new, or a samples file written before (a
        file of the user's is never replaced)."""
        path = Path(path)
        if path.is_dir():
            raise ConfigError.single(str(path), "is a folder; give a file name for the samples")
        if path.exists() or path.is_symlink():
            try:
                cls.load(path)
            except (ConfigError, OSError):
                raise ConfigError.single(
                    str(path),
                    "exists and is not a statreg samples file; nothing was replaced: choose another file name",
                ) from None

    def save(self, path: str | Path) -> None:
        """Write the samples as JSON (so that the "before" samples outlive the old build); only over a
        samples file (:meth:`check_target`)."""
        self.check_target(path)
        data = {"format": FORMAT, **asdict(self)}
        Path(path).write_text(json.dumps(data, indent=1) + "\n")

    @classmethod
    def load(cls, path: str | Path) -> Samples:
        """Read a file written by :meth:`save`; a ConfigError names what is wrong with it."""
        try:
            data = json.loads(Path(path).read_text())
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:  # a binary file too
            raise ConfigError.single(str(path), f"not a JSON file ({exc})") from None
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise ConfigError.single(str(path), f"not a statreg samples file (expected format {FORMAT!r})")
        try:
            cases = tuple(Case(c["name"], c["scenario"], c["overrides"], tuple(c["metrics"])) for c in data["cases"])
            return cls(cases, data["seeds"], data["values"], data["overrides"], data["build"])
        except (KeyError, TypeError) as exc:
            raise ConfigError.single(str(path), f"incomplete statreg samples file ({exc!r})") from None


def collect(
    reference: Sequence[Case] = REFERENCE,
    replications: int = 20,
    first_seed: int = 1,
    overrides: Mapping[str, Any] | None = None,
    progress: Callable[[Case, float], None] | None = None,
) -> Samples:
    """Run every case of ``reference`` with seeds ``first_seed .. first_seed + replications - 1`` (in
    memory, no output folder) and sample its metrics. ``overrides`` apply to every case after its own
    (a deliberate model change); ``progress`` is told each finished case and its wall time (s)."""
    seeds = list(range(first_seed, first_seed + replications))
    extra = dict(overrides or {})
    values: dict[str, list[float]] = {}
    build = ""
    for case in reference:
        t0 = time.perf_counter()
        for seed in seeds:
            r = api.run(SCENARIOS / case.scenario, seed=seed, overrides={**case.overrides, **extra}, plots=False)
            build = r.manifest.get("git_describe") or ""
            for m in case.metrics:
                values.setdefault(f"{case.name}:{m}", []).append(metric(r.summary, m))
        if progress is not None:
            progress(case, time.perf_counter() - t0)
    return Samples(tuple(reference), seeds, values, extra, build)


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values, in the order given: sorted ascending, the i-th smallest
    (from 0) is multiplied by (m − i), capped at 1, and raised to the largest adjusted value before it
    (an adjusted p-value never falls as the raw one grows). Rejecting where adjusted ≤ α is the
    step-down procedure: reject while p₍ᵢ₎ ≤ α / (m − i), stop at the first that is not."""
    m = len(pvalues)
    adjusted = [0.0] * m
    running = 0.0
    for rank, i in enumerate(sorted(range(m), key=lambda k: pvalues[k])):
        running = max(running, min(1.0, (m - rank) * pvalues[i]))
        adjusted[i] = running
    return adjusted


@dataclass(frozen=True)
class Row:
    """One test of one metric. ``p`` and ``p_holm`` are None for a metric that is constant in both
    samples (no test is defined; it differs exactly when the constants do, and is left out of the
    Holm family)."""

    metric: str
    test: str
    before_mean: float
    before_sd: float
    after_mean: float
    after_sd: float
    p: float | None
    p_holm: float | None
    differs: bool
    note: str = ""


@dataclass(frozen=True)
class Comparison:
    """The result of :func:`compare`: two rows per metric (``mean``: Welch, ``spread``: Levene)."""

    rows: tuple[Row, ...]
    alpha: float
    n_before: int
    n_after: int

    @property
    def ok(self) -> bool:
        """True if no metric differs."""
        return not any(r.differs for r in self.rows)

    def table(self) -> str:
        """A plain-text table of the rows and a closing verdict line."""
        head = ("metric", "test", "before mean ± sd", "after mean ± sd", "p", "p Holm", "verdict")
        lines = [head] + [
            (
                r.metric,
                r.test,
                f"{r.before_mean:.6g} ± {r.before_sd:.3g}",
                f"{r.after_mean:.6g} ± {r.after_sd:.3g}",
                _p(r.p),
                _p(r.p_holm),
                ("DIFFERS" if r.differs else "same") + (f" ({r.note})" if r.note else ""),
            )
            for r in self.rows
        ]
        widths = [max(len(line[i]) for line in lines) for i in range(len(head))]
        text = ["  ".join(cell.ljust(w) for cell, w in zip(line, widths)).rstrip() for line in lines]
        text.insert(1, "  ".join("-" * w for w in widths))
        tested = sum(r.p is not None for r in self.rows)
        flagged = sum(r.differs for r in self.rows)
        text.append(
            f"{'OK' if self.ok else 'DIFFERS'}: {flagged} of {len(self.rows)} tests flagged "
            f"(R = {self.n_before} before, {self.n_after} after; Holm over {tested} tests at "
            f"alpha = {self.alpha:g})"
        )
        return "\n".join(text)


def _p(p: float | None) -> str:
    return "-" if p is None else f"{p:.3g}"


def compare(
    before: Mapping[str, Sequence[float]], after: Mapping[str, Sequence[float]], alpha: float = ALPHA
) -> Comparison:
    """Welch's t-test and Levene's test (median-centred) on every metric, Holm-corrected together.

    ``before`` and ``after`` map metric names to samples (at least two values each) and must name the
    same metrics. A metric constant in both samples is compared exactly (its rows say "constant")."""
    import numpy as np
    from scipy import stats

    if set(before) != set(after):
        raise ConfigError.single(
            "metrics", f"before and after sample different metrics: {sorted(set(before) ^ set(after))}"
        )
    pending: list[dict[str, Any]] = []
    for name in before:
        a, b = np.asarray(before[name], dtype=float), np.asarray(after[name], dtype=float)
        if min(len(a), len(b)) < 2:
            raise ConfigError.single(name, "at least two replications before and after are needed")
        common = dict(
            metric=name,
            before_mean=float(a.mean()),
            before_sd=float(a.std(ddof=1)),
            after_mean=float(b.mean()),
            after_sd=float(b.std(ddof=1)),
        )
        if np.ptp(a) == 0 and np.ptp(b) == 0:
            same = a[0] == b[0]
            pending.append(dict(common, test="mean", p=None, differs=not same, note="constant"))
            pending.append(dict(common, test="spread", p=None, differs=False, note="constant"))
            continue
        # near-constant samples make scipy warn about precision; the p-values are still right
        with warnings.catch_warnings(), np.errstate(divide="ignore", invalid="ignore"):
            warnings.simplefilter("ignore", RuntimeWarning)
            p_mean = float(stats.ttest_ind(a, b, equal_var=False).pvalue)
            p_spread = float(stats.levene(a, b, center="median").pvalue)
        # Levene is 0/0 when every absolute deviation from the median is the same in both samples:
        # the spreads are then identical
        pending.append(dict(common, test="mean", p=p_mean))
        pending.append(dict(common, test="spread", p=1.0 if math.isnan(p_spread) else p_spread))
    tested = [row for row in pending if row["p"] is not None]
    for row, adjusted in zip(tested, holm([row["p"] for row in tested])):
        row.update(p_holm=adjusted, differs=adjusted <= alpha)
    rows = tuple(Row(**{"p_holm": None, **row}) for row in pending)
    return Comparison(rows, alpha, len(next(iter(before.values()), [])), len(next(iter(after.values()), [])))
