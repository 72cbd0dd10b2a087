"""What to do about a sync that fails the gate: the same answers for the scan and the check.

Either the code can avoid the wait, and the hint spells out the sync-free form (a pinned host
buffer, a non-blocking copy, an event recorded after it, and the host's read deferred to where
the value is consumed), or the sync is by design, and the budget gets an allow rule naming the
site and why (the scan also takes an inline ``# syncgate: allow[kind] reason`` comment). Where the
host needs the value in the same step, no sync-free form exists: the hint says the allow rule is
the only remedy. Every printed form is applied literally by the tests and re-scanned; the budget
stanza is a whole file that ``syncgate doctor --budget`` accepts as pasted.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Pattern:
    """The sync-free form of one kind of sync: what to do, the code for the step, and the code
    for where the value is consumed (off the per-step path)."""

    text: str
    step: tuple[str, ...] = ()
    consumer: tuple[str, ...] = ()


_DEFER = ("where the value is consumed, off the step (one step later, or in the async output "
          "object's get_output())")
_READ = ("event.synchronize()", "values = host_buf.tolist()")
_ONLY_ALLOW = ("if the host needs the value in this same step, there is no sync-free form: "
               "the allow rule below is the only remedy")

#: The non-blocking form of each kind of sync (vLLM #22760 is the event-based readback). Names:
#: ``value`` the device tensor, ``host_buf`` a host buffer allocated once with pin_memory=True,
#: ``event`` an event created once, ``stream`` the stream waited on, ``data`` the host values
#: an upload sends.
PATTERNS = {
    "blocking_readback": Pattern(
        "do not read device values on the host in the step: copy into a pinned host buffer "
        "without blocking, record an event after the copy, and read the buffer " + _DEFER
        + "; " + _ONLY_ALLOW,
        ("host_buf.copy_(value, non_blocking=True)", "event.record()"), _READ),
    "blocking_copy": Pattern(
        "copy into a pinned host buffer with non_blocking=True and record an event after the copy; "
        "read the buffer " + _DEFER + "; " + _ONLY_ALLOW,
        ("host_buf.copy_(value, non_blocking=True)", "event.record()"), _READ),
    "device_sync": Pattern(
        "drop the device synchronize: record an event after the work whose result the host needs, "
        "and wait on that event only " + _DEFER + "; " + _ONLY_ALLOW,
        ("event.record()",), ("event.synchronize()",)),
    "stream_sync": Pattern(
        "do not block the host on the stream: make the consuming stream wait on it instead "
        "(torch.cuda.current_stream().wait_stream(stream), on NPU torch.npu); " + _ONLY_ALLOW,
        ("torch.cuda.current_stream().wait_stream(stream)",)),
    "event_sync": Pattern(
        "move the event wait " + _DEFER + ", or drop it when nothing on the host reads the "
        "buffer; " + _ONLY_ALLOW,
        (), ("event.synchronize()",)),
}


#: A blocking copy the other way, host to device (``torch.tensor(data, device=...)``, a copy from
#: pageable memory, a strided slice or a dtype change): nothing waits for a device value, so a
#: sync-free form always exists: stage the data in the pinned buffer, then queue the copy.
UPLOAD = Pattern(
    "stage the host data in a host buffer allocated once with pin_memory=True (filled in place, "
    "already in the device buffer's dtype, copied as one contiguous slice) and upload it with a "
    "non-blocking copy into a device buffer allocated once; refill the staging buffer only after "
    "that copy has run (vLLM's runners refill their CpuGpuBuffer halves once per step)",
    ("n = len(data)", "host_buf[:n] = torch.as_tensor(data)",
     "value[:n].copy_(host_buf[:n], non_blocking=True)"))


def budget_stanza(symbol: str, kind: str, device: str) -> str:
    """A whole budget file, valid as pasted into an empty file, allowing the site (``reason`` is
    required). In a file of your own, add only its ``[[budget.allow]]`` table to the
    ``[[budget]]`` with ``speculation = false``."""
    return (f'extends = "{device}"\n[[budget]]\nspeculation = false\n'
            f'[[budget.allow]]\nsite = "{symbol}"\nkind = "{kind}"\n'
            'reason = "<why this sync is by design>"')


def fix_lines(symbol: str, kind: str, *, inline: bool = False, device: str = "cuda",
              upload: bool = False) -> list[str]:
    """The answers as lines for a terminal or a CI message: the sync-free form with its code,
    then the allow rule (``inline``: the scan also takes a comment on the line itself;
    ``upload``: the blocking copy goes host to device)."""
    pattern = UPLOAD if upload and kind == "blocking_copy" else PATTERNS.get(
        kind, Pattern("remove the host wait from the per-step path"))
    lines = [f"fix: {pattern.text}"]
    if pattern.step or pattern.consumer:
        lines.append(f"  in the step, instead of the sync: {'; '.join(pattern.step) or '(nothing)'}")
    if pattern.consumer:
        lines.append(f"  where the value is consumed: {'; '.join(pattern.consumer)}")
    if inline:
        lines.append(f"  or, if by design: `# syncgate: allow[{kind}] <why>` on that line")
    lines.append("  or, if by design, a budget file (--budget; in your own file add only the "
                 "[[budget.allow]] table):")
    lines += [f"      {line}" for line in budget_stanza(symbol, kind, device).splitlines()]
    return lines


def fix_line(symbol: str, kind: str, *, inline: bool = False, device: str = "cuda",
             upload: bool = False) -> str:
    """:func:`fix_lines` as one line, for a JSON field or a CI annotation."""
    first, *rest = fix_lines(symbol, kind, inline=inline, device=device, upload=upload)
    told = [line.strip() for line in rest if line.startswith("  ") and not line.startswith("      ")]
    stanza = " | ".join(line.strip() for line in rest if line.startswith("      "))
    return "; ".join([first, *told]) + " " + stanza
