"""The run config: what ``opgen-backend test`` asks the runner to do.

Note [Run config contract]: src/conformance/runconfig.ts writes it, with every
default filled in there (RUN_CONFIG_DEFAULTS); this side decides nothing. A key
that is missing or unknown, or a ``version`` other than PROTOCOL_VERSION, is
refused with a message naming it, so the two sides cannot drift apart
silently. Change both files and PROTOCOL_VERSION together.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from typing import Any

from . import PROTOCOL_VERSION

# The keys of one entry of ``ops`` (src/conformance/runconfig.ts RunConfigOp).
OP_KEYS = ("name", "kind", "view", "core", "decomposed", "dtypes")
# The keys of one entry of ``models`` (RunConfigModel): one case of a model file.
MODEL_KEYS = ("name", "file", "case")


class ConfigError(ValueError):
    """A run config this runner cannot read; the message says what is wrong."""


@dataclass(frozen=True)
class RunConfig:
    version: int
    device: str
    package: str | None
    faults: str | None
    seed: int
    max_samples: int
    grad_samples: int
    timeout_s: float
    startup_timeout_s: float
    gen_timeout_s: float
    max_incidents: int
    workers: int
    worker_memory_bytes: int | None
    resume: bool
    # Note [Compiled mode] (compiled.py): every device call through torch.compile(backend="inductor")
    compile: bool
    results: str
    cache_dir: str
    tolerances: list[dict[str, Any]]
    ops: list[dict[str, Any]]
    models: list[dict[str, Any]]

    @staticmethod
    def from_dict(d: Any, where: str = "run config") -> RunConfig:
        if not isinstance(d, dict):
            raise ConfigError(f"{where}: expected a JSON object")
        fields = [f.name for f in dataclasses.fields(RunConfig)]
        missing = [k for k in fields if k not in d]
        unknown = sorted(k for k in d if k not in fields)
        if missing or unknown:
            raise ConfigError(
                f"{where}: "
                + "; ".join(
                    ([f"missing key(s) {', '.join(missing)}"] if missing else [])
                    + ([f"unknown key(s) {', '.join(unknown)}"] if unknown else [])
                )
                + f"; the keys are {', '.join(fields)}"
            )
        if d["version"] != PROTOCOL_VERSION:
            raise ConfigError(
                f"{where}: version {d['version']!r}, this runner reads version {PROTOCOL_VERSION}; "
                "opgen-backend and python/opgen_conformance come from different releases"
            )
        for i, op in enumerate(d["ops"]):
            keys = set(op) if isinstance(op, dict) else set()
            if keys != set(OP_KEYS):
                raise ConfigError(f"{where}: ops[{i}] has keys {sorted(keys)}; expected {list(OP_KEYS)}")
        for i, m in enumerate(d["models"]):
            keys = set(m) if isinstance(m, dict) else set()
            if keys != set(MODEL_KEYS):
                raise ConfigError(f"{where}: models[{i}] has keys {sorted(keys)}; expected {list(MODEL_KEYS)}")
        return RunConfig(**d)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def load_config(path: str) -> RunConfig:
    with open(path) as f:
        return RunConfig.from_dict(json.load(f), path)


def write_config(path: str, config: RunConfig) -> None:
    with open(path, "w") as f:
        json.dump(config.to_dict(), f)
