"""BCN parameters used by the analytical model (model reference §2.1, §8).

Units follow the model reference: ``gi`` multiplies a feedback value in pages and a rate unit ``ru_bps``;
``gd`` is per page; ``qeq_pages`` is in pages of 64 B; ``frame_bytes`` is the data frame size S.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from cnsim.schemes.bcn import gain_rule

PAGE_BYTES = 64
"""One page of queue, bytes (model reference §0)."""


@dataclass(frozen=True)
class BcnParams:
    """BCN gains and sampling of model reference §2.1, defaults = the [A] baseline at 10 Gb/s.

    ``fb_noise_pages`` is the standard deviation of the feedback value Fb around its fluid mean,
    used only by the queue-coupled fluid model (§8 "queue-level companion"); its default, one
    frame of queue (Qoff) plus W frames of Qdelta, is a [PROPOSED] calibration: the packet-level
    queue moves in whole frames, so Fb is never known more finely than that.
    """

    gi: float = 0.53333
    gd: float = 2.6667e-4
    ru_bps: float = 1e6
    w: float = 2.0
    qeq_pages: float = 375.0
    pm: float = 0.01
    frame_bytes: int = 1500
    line_rate_bps: float = 10e9
    fb_noise_pages: float | None = None

    @property
    def frame_bits(self) -> float:
        """S of §8, bits."""
        return 8.0 * self.frame_bytes

    @property
    def frame_pages(self) -> float:
        """One data frame in pages (fractional pages, model reference §0)."""
        return self.frame_bytes / PAGE_BYTES

    @property
    def k_bps(self) -> float:
        """Gi·Ru/Gd, the rate scale of the BCN utility ln(1 + r/k) (§8), bit/s."""
        return self.gi * self.ru_bps / self.gd

    @property
    def fb_max_pages(self) -> float:
        """(1 + 2W)·Qeq, the largest |Fb| after clamping (§2.1)."""
        return (1.0 + 2.0 * self.w) * self.qeq_pages

    @property
    def noise_pages(self) -> float:
        """Standard deviation of Fb used by the queue-coupled model (see class docstring)."""
        if self.fb_noise_pages is not None:
            return self.fb_noise_pages
        return (1.0 + self.w) * self.frame_pages

    def with_(self, **changes: float) -> BcnParams:
        """A copy with some fields changed."""
        return replace(self, **changes)


def normalised_gains(
    line_rate_bps: float, qeq_pages: float, w: float = 2.0, ru_bps: float = 1e6, max_decrease: float = 0.5
) -> tuple[float, float]:
    """Gi and Gd from the gain-normalisation rule of model reference §2.1 — the scheme's own rule
    (:func:`cnsim.schemes.bcn.gain_rule`, the one the engine's parameters are compiled with)."""

    return gain_rule(line_rate_bps, qeq_pages, w, ru_bps, 0.1, max_decrease)
