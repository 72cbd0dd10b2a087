"""A generation runner of our own whose stage decodes through a session object that only locals
and parameters hold: a getter's return annotation, a helper's parameter annotation, a local
constructor, a local alias of an attribute and a call on a factory's return name its class."""

import torch
from stream_session import StreamSession, open_session


class StreamModelRunner:
    def __init__(self) -> None:
        self.input_ids = torch.zeros(4096, dtype=torch.int64, device="cuda")
        self._session: StreamSession | None = None
        self.kept = StreamSession(4)

    def _ensure_session(self) -> StreamSession:
        if self._session is None:
            self._session = StreamSession(8)
        return self._session

    def _flush_with(self, session: StreamSession, codes: torch.Tensor) -> int:
        return session.flush(codes)

    def _release_all(self, session: StreamSession, slots: list[int]) -> None:
        for slot in slots:
            session.release(slot)

    def execute_model(self, num_tokens: int) -> list:
        codes = self.input_ids[:num_tokens].reshape(2, -1)
        session = self._ensure_session()
        audio = session.step(codes)
        flushed = self._flush_with(session, codes)
        scratch = StreamSession(1)
        peak = scratch.probe(codes)
        kept = self.kept
        rows = kept.trim(codes)
        low = open_session(2).describe(codes)
        self._release_all(session, [0, 1])
        return [audio, flushed, peak, rows, low]
