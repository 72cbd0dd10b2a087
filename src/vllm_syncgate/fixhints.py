"""What to do about a sync that fails the gate: the same two answers for the scan and the check.

Either the sync is by design, and the budget gets an allow rule naming the site and why (the
scan also takes an inline ``# syncgate: allow[kind] reason`` comment on the line), or it is not,
and the code should use the pattern that does not block the host for its kind of sync.
"""

from __future__ import annotations

#: The non-blocking replacement for each kind of sync (vLLM #22760 is the event-based readback).
PATTERNS = {
    "blocking_readback": "use the event-based readback: copy with non_blocking=True into a pinned "
                         "host buffer, record an event after the copy, and synchronize that event "
                         "only where the host reads the values (as GPUModelRunner._to_list does)",
    "blocking_copy": "copy with non_blocking=True into a buffer allocated with pin_memory=True, "
                     "then wait on an event recorded after the copy, not on the device",
    "device_sync": "drop the device synchronize: wait on an event recorded after the work whose "
                   "result the host needs, and only where it needs it",
    "stream_sync": "let the consuming stream wait (wait_stream / wait_event) instead of blocking "
                   "the host on the stream",
    "event_sync": "move the event wait to where the host reads the value (after the next step is "
                  "launched), or drop it when nothing on the host reads the buffer",
}


def allow_stanza(symbol: str, kind: str) -> str:
    """The budget TOML to add when the sync is by design (``reason`` is required)."""
    return (f'[[budget.allow]]\nsite = "{symbol}"\nkind = "{kind}"\n'
            'reason = "<why this sync is by design>"')


def fix_lines(symbol: str, kind: str, *, inline: bool = False, device: str = "<device>") -> list[str]:
    """Both answers as lines for a terminal or a CI message: the pattern, then the allow rule
    (the stanza to paste into a budget file that ``extends`` the device's); ``inline``: the scan
    also takes a comment on the line itself."""
    lines = [f"fix: {PATTERNS.get(kind, 'remove the host wait from the per-step path')}"]
    if inline:
        lines.append(f"  or, if by design: `# syncgate: allow[{kind}] <why>` on that line")
    lines.append(f"  or, if by design, add to your budget file (extends = \"{device}\"):")
    lines += [f"      {line}" for line in allow_stanza(symbol, kind).splitlines()]
    return lines


def fix_line(symbol: str, kind: str, *, inline: bool = False, device: str = "<device>") -> str:
    """:func:`fix_lines` as one line, for a JSON field or a CI annotation."""
    first, *rest = fix_lines(symbol, kind, inline=inline, device=device)
    alternatives = [line.strip() for line in rest if line.startswith("  or")]
    stanza = "; ".join(line.strip() for line in rest if not line.startswith("  or"))
    return "; ".join([first, *alternatives]) + " " + stanza
