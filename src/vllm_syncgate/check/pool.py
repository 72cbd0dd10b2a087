"""One server at a time for a test session, reused while consecutive tests ask for the same group.

pytest runs a module's tests in order, so tests parametrized by (group, scenario) in profile
order start each group's server once. A group whose server failed to start fails every later
request for it at once instead of booting again.
"""

from __future__ import annotations

from pathlib import Path

from vllm_syncgate.check.run import GroupRun, GroupSession, Say
from vllm_syncgate.errors import ProfileError
from vllm_syncgate.profiles import Profile


class ServerPool:
    def __init__(self, profile: Profile, model_dir: Path, work_dir: Path,
                 say: Say) -> None:
        self.profile = profile
        self.model_dir = model_dir
        self.work_dir = work_dir
        self.say = say
        self._current: GroupSession | None = None
        self._failed: dict[str, Exception] = {}
        self.finished: list[GroupRun] = []

    def get(self, group_name: str) -> GroupSession:
        if self._current is not None and self._current.result.profile_group.name == group_name:
            return self._current
        self.close()
        if group_name in self._failed:
            raise self._failed[group_name]
        group = next((g for g in self.profile.groups if g.name == group_name), None)
        if group is None:
            raise ProfileError(self.profile.source, "group", f"no group named {group_name!r}")
        session = GroupSession(self.profile, group, self.model_dir, self.work_dir)
        try:
            session.launch()
            session.wait(self.say)
        except Exception as exc:
            session.stop()
            self._failed[group_name] = exc
            raise
        self._current = session
        return session

    def close(self) -> None:
        if self._current is not None:
            self.finished.append(self._current.stop())
            self._current = None
