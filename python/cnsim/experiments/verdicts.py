"""The verdicts of a reproduction's cells and their counts (structural and discriminating cells apart, model
reference §12 R9, R11), shared by the study runner (:mod:`cnsim.experiments.reproduce`) and its report."""

from __future__ import annotations

VERDICTS = ("within band", "explained", "outside band", "not available")


def counted(cells: list[dict]) -> list[dict]:
    """The cells that count: not sensitivity rows, and a repeated measurement (``same_as``) only once."""
    return [c for c in cells if not c.get("sensitivity") and not c.get("same_as")]


def count_cells(cells: list[dict]) -> dict[str, int]:
    """Verdict counts, plus the structural / discriminating split (model reference §12 R9, R11): every verdict again over
    the discriminating cells alone (``discriminating <verdict>``) and the structural cells within band.
    Sensitivity rows are not cells; a repeated measurement counts once (``repeated`` says how many were left out)."""
    repeated = sum(1 for c in cells if c.get("same_as") and not c.get("sensitivity"))
    cells = counted(cells)
    counts: dict[str, int] = {}
    for c in cells:
        counts[c["verdict"]] = counts.get(c["verdict"], 0) + 1
    disc = [c for c in cells if not c.get("structural")]
    counts["structural"] = len(cells) - len(disc)
    counts["structural within band"] = sum(c["verdict"] == "within band" for c in cells if c.get("structural"))
    counts["discriminating"] = len(disc)
    for v in VERDICTS:
        counts[f"discriminating {v}"] = sum(c["verdict"] == v for c in disc)
    counts["repeated"] = repeated
    return counts
