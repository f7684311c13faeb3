"""The connections open on one port, and which one goes when they fill it.

A cap that closes every newcomer once the table is full lets anyone who can reach the port keep
it shut: open connections and say nothing (a TLS handshake never finished, a keep-alive
connection with no request, a request head sent a byte at a time), and kube-apiserver's next
connection is closed as it is accepted. So a full table makes room: the connection idle longest
goes, whatever it waits for, and a newcomer is refused only when every slot holds a request
being answered (which the body timeout and the handler bound).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

# What an evicted connection was doing, as the metric names it.
HANDSHAKE: Final = "handshake"
IDLE: Final = "idle"
EVICTED_STATES: Final = (HANDSHAKE, IDLE)


class Slot:
    """One accepted connection. Idle from its accept, or from the end of its last answer: its
    TLS handshake, its next request head, or both, are not done yet."""

    __slots__ = ("close", "handshaking")

    def __init__(self, close: Callable[[], None]) -> None:
        self.close = close
        self.handshaking = True

    @property
    def state(self) -> str:
        return HANDSHAKE if self.handshaking else IDLE


@dataclass(frozen=True, slots=True)
class Admission:
    admitted: bool
    # Taken out of the table to make room; the caller closes it.
    evicted: Slot | None = None


class ConnectionTable:
    """Idle slots in the order they became idle (the longest idle first), busy ones apart. Each
    step is O(1): a flood of connections costs no scan of the table."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._idle: OrderedDict[Slot, None] = OrderedDict()
        self._busy: set[Slot] = set()

    def __len__(self) -> int:
        return len(self._idle) + len(self._busy)

    def admit(self, slot: Slot) -> Admission:
        evicted: Slot | None = None
        if len(self) >= self.capacity:
            if not self._idle:
                return Admission(admitted=False)
            evicted, _ = self._idle.popitem(last=False)
        self._idle[slot] = None
        return Admission(admitted=True, evicted=evicted)

    def busy(self, slot: Slot) -> None:
        """A request head is complete: its slot is not for the taking until it is answered."""
        if slot in self._idle:
            del self._idle[slot]
            self._busy.add(slot)

    def idle(self, slot: Slot) -> None:
        """Answered: idle from now, the youngest."""
        if slot in self._busy:
            self._busy.discard(slot)
            self._idle[slot] = None

    def remove(self, slot: Slot) -> None:
        """Closed (a no-op for one already evicted)."""
        self._idle.pop(slot, None)
        self._busy.discard(slot)

    def answering(self) -> int:
        """Slots holding a request being answered."""
        return len(self._busy)

    def handshaking(self) -> list[Slot]:
        return [slot for slot in self._idle if slot.handshaking]
