"""A runner-shaped class: one step calls a helper, another method is never called."""

import threading


class Runner:
    def step(self):
        return self._helper() + sum(x for x in (1, 2))

    def _helper(self):
        return 1

    def unused(self):
        return 0

    def in_a_thread(self):
        done = []
        worker = threading.Thread(target=lambda: done.append(self._from_thread()))
        worker.start()
        worker.join()
        return done

    def _from_thread(self):
        return 2
