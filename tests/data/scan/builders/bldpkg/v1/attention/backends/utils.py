"""Helpers the runner imports from the backends package (it imports no backend itself)."""


def padded(num_reqs, multiple=8):
    return (num_reqs + multiple - 1) // multiple * multiple
