"""The one fake clock of the suite: it moves only when a test says so."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class FakeClock:
    """Monotonic and wall clocks moved by hand; ``sleep`` advances both and records the
    pause, so waiting code runs instantly and its pacing can be asserted."""

    now: float = 1000.0
    wall: float = 1_700_000_000.0
    sleeps: list[float] = field(default_factory=list)

    def monotonic(self) -> float:
        return self.now

    def time(self) -> float:
        return self.wall

    def advance(self, seconds: float) -> None:
        self.now += seconds
        self.wall += seconds

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.advance(seconds)

    async def asleep(self, seconds: float) -> None:
        self.sleep(seconds)
