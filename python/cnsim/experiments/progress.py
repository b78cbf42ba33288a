"""A sweep's progress: a rich progress bar on a terminal, plain periodic lines otherwise."""

from __future__ import annotations

import sys
import time


class SweepProgress:
    """Rich progress bar (done / failed, ETA) on a terminal; plain periodic lines otherwise."""

    def __init__(self, total: int, label: str, enabled: bool = True, stream=None, every_s: float = 5.0):
        from cnsim.cli.common import make_console  # typer and rich: only when a sweep shows its progress

        self.console = make_console(file=stream or sys.stderr)
        self.total, self.done, self.failed = total, 0, 0
        self.label = label
        self.enabled = enabled and total > 0
        self.t0 = time.monotonic()
        self.last = 0.0
        self.every_s = every_s
        self.bar = None
        if self.enabled and self.console.is_terminal:
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )

            self.bar = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("[green]{task.fields[ok]} ok[/] [red]{task.fields[failed]} failed[/]"),
                TimeElapsedColumn(),
                TextColumn("ETA"),
                TimeRemainingColumn(),
                console=self.console,
                transient=False,
            )
            self.bar.start()
            self.task = self.bar.add_task(label, total=total, ok=0, failed=0)

    def advance(self, status: str) -> None:
        self.done += 1
        if status not in ("ok", "skipped"):
            self.failed += 1
        if not self.enabled:
            return
        if self.bar is not None:
            self.bar.update(self.task, completed=self.done, ok=self.done - self.failed, failed=self.failed)
            return
        now = time.monotonic()
        if now - self.last >= self.every_s or self.done == self.total:
            self.last = now
            elapsed = now - self.t0
            eta = elapsed / self.done * (self.total - self.done) if self.done else float("nan")
            self.console.print(
                f"{self.label}: {self.done}/{self.total} done, {self.failed} failed, "
                f"elapsed {elapsed:.0f}s, ETA {eta:.0f}s",
                markup=False,
                highlight=False,
            )

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()
