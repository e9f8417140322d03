"""A Dask scheduler preload (``dask scheduler --preload tests/scheduler_noise.py``) that
sends each of the first ``NOISY_CLIENTS`` clients (an environment variable, default 1) a
message in the same batch as the handshake's ``stream-start``: what a scheduler busy with
a run can do, and what distributed's client handshake refuses
(``assert len(msg) == 1``)."""

import asyncio
import os

from distributed.diagnostics.plugin import SchedulerPlugin


class HandshakeNoise(SchedulerPlugin):
    name = "handshake-noise"

    def __init__(self, clients: int) -> None:
        self.left = clients
        self.seen = 0

    def add_client(self, scheduler, client: str) -> None:
        self.seen += 1
        if self.left <= 0:
            return
        self.left -= 1

        def send() -> None:  # runs once the scheduler has queued stream-start (2 ms batches)
            scheduler.client_comms[client].send(
                {"op": "event", "topic": "noise", "event": (0.0, "noise")}
            )

        asyncio.get_running_loop().call_soon(send)


def dask_setup(scheduler) -> None:
    scheduler.add_plugin(HandshakeNoise(int(os.environ.get("NOISY_CLIENTS", "1"))))
