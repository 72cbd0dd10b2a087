"""Every failure syncgate reports to a person is one of these types.

Callers branch on the type, never on the message. Each error carries the exit code the CLI uses
for it, and its message is one line that names the input and what is wrong with it.
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_GATE_FAILED = 1
EXIT_USAGE = 2


class SyncgateError(Exception):
    """Base class: a one-line, user-facing problem with an input or the environment."""

    exit_code: int = EXIT_USAGE


class UsageError(SyncgateError):
    """A command-line argument or option is invalid."""


class EnvironmentProblem(SyncgateError):
    """Something the command needs is not installed or not reachable on this machine."""


class BrokenStackError(EnvironmentProblem):
    """An installed package of the serving stack (torch, vLLM, ...) fails to import.

    ``package`` is the distribution that broke (often not the one imported: a torchvision built
    for another torch breaks ``import vllm``); exit 2, since no verdict on the code was reached.
    """

    def __init__(self, package: str, message: str) -> None:
        self.package = package
        super().__init__(message)


class ConfigError(SyncgateError):
    """A data file (budget, profile) is malformed. The message names the file and the key."""

    def __init__(self, path: object, key: str, problem: str) -> None:
        self.path = str(path)
        self.key = key
        self.problem = problem
        super().__init__(f"{self.path}: {key}: {problem}")


class BudgetError(ConfigError):
    """A budget TOML file is invalid (syntax, unknown kind, negative count, ...)."""


class ProfileError(ConfigError):
    """A device profile TOML file is invalid."""


class BaselineError(ConfigError):
    """A scan baseline file cannot be read or is not one (``syncgate scan --baseline``)."""


class SettingsError(ConfigError):
    """``[tool.syncgate]`` in a scanned tree's pyproject.toml is invalid."""


class SimulatorError(SyncgateError):
    """The simulated accelerator was used wrongly (outside its context, nested, ...)."""


class SimulatorInactiveError(SimulatorError):
    """A simulated stream, event or tensor was touched after its accelerator context closed."""


class ModelDirError(SyncgateError):
    """A model directory is missing, incomplete or unreadable."""


class ServerError(SyncgateError):
    """The ``vllm serve`` process could not be started or kept alive."""


class PortInUseError(ServerError):
    """The requested port is already bound by another process."""


class ServerStartError(ServerError):
    """The server exited during start-up; the message carries the tail of its log."""


class ServerTimeoutError(ServerError):
    """The server did not become healthy in time."""


class ReportDirError(SyncgateError):
    """The report directory cannot be created or written."""


class ScanError(SyncgateError):
    """Nothing could be scanned (all paths missing or unparsable)."""


class UnsupportedLayoutError(SyncgateError):
    """A vllm-ascend source tree lacks a class or method the harness needs."""


class LogParseError(SyncgateError):
    """A CI log or report file cannot be read as any supported format."""


class AuditDirError(SyncgateError):
    """A live-audit directory is missing, empty, or holds a journal that cannot be read."""


class JournalFormatError(AuditDirError):
    """A journal was written in a format version this syncgate does not read."""


class RequestError(ServerError):
    """An HTTP request to a running server failed or returned something unusable."""


class RerunError(SyncgateError):
    """The rerun session itself broke (pytest usage/internal error), not the tests it ran."""


class ContainerError(SyncgateError):
    """A compose service or image to rerun in does not exist, or the Docker engine refused."""
