"""Helpers the runner imports from the backends package (it imports no backend itself)."""


def rounded(num_reqs, multiple=4):
    return -(-num_reqs // multiple) * multiple
