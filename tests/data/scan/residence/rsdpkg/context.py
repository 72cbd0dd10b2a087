"""The step's forward context (not read by the scan: what it holds is `[values] context_records`)."""

_CONTEXT = None


def get_forward_context():
    return _CONTEXT
