"""Progress of an import on stderr: one line rewritten in place on a terminal, a plain
line every few seconds otherwise; nothing with ``quiet``."""

import sys
import time
from typing import Optional, TextIO

#: How often the line is redrawn on a terminal, and printed otherwise (seconds).
TTY_PERIOD_S = 0.1
PLAIN_PERIOD_S = 5.0
BAR_WIDTH = 30


class Progress:
    """Call :meth:`update` per message; :meth:`done` at the end."""

    def __init__(self, total: Optional[int], quiet: bool = False, out: Optional[TextIO] = None) -> None:
        self.total = total
        self.quiet = quiet
        self.out = out or sys.stderr
        self.tty = self.out.isatty()
        self.period = TTY_PERIOD_S if self.tty else PLAIN_PERIOD_S
        self.start = time.monotonic()
        self._next = self.start + self.period
        self.messages = 0
        self.bytes = 0

    def update(self, nbytes: int) -> None:
        """One message of ``nbytes`` raw bytes read."""
        self.messages += 1
        self.bytes += nbytes
        if self.quiet:
            return
        now = time.monotonic()
        if now >= self._next:
            self._next = now + self.period
            self._draw(now, final=False)

    def done(self) -> None:
        """The last line (a newline after the in-place line)."""
        if not self.quiet:
            self._draw(time.monotonic(), final=True)

    def note(self, text: str) -> None:
        """One line of text (``import: TEXT``), unless quiet."""
        if not self.quiet:
            self.out.write(f"import: {text}\n")
            self.out.flush()

    def _draw(self, now: float, final: bool) -> None:
        elapsed = max(now - self.start, 1e-9)
        rate = self.bytes / elapsed / 1e6
        if self.total:
            frac = min(self.messages / self.total, 1.0)
            head = f"{self.messages}/{self.total} messages ({frac * 100:5.1f} %)"
            if self.tty:
                filled = int(frac * BAR_WIDTH)
                head = "[" + "#" * filled + "." * (BAR_WIDTH - filled) + "] " + head
        else:
            head = f"{self.messages} messages"
        line = f"import: {head}, {self.bytes / 1e6:.1f} MB, {rate:.1f} MB/s, {elapsed:.1f} s"
        if self.tty:
            self.out.write("\r\x1b[K" + line + ("\n" if final else ""))
        else:
            self.out.write(line + "\n")
        self.out.flush()
