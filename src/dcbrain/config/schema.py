"""``dcbrain.toml``'s schema: LLMs, roles, chains, tools, MCP servers, memory and budgets.

``load_config(path)`` reads and validates the file (every error names its key path,
``dcbrain.toml: llm.main.base_url: Input should be a valid URL``); building the objects it
describes is :mod:`dcbrain.config.composition`'s (``build_brain(config)``, re-exported here).
Relative paths in the file (tools, memory) are relative to the file. With no LLM declared,
every role uses the embedded local model (:class:`~dcbrain.llm.local.LocalLLM`).

Every key can also be set by a ``DCBRAIN_…`` environment variable (``DCBRAIN_BRAIN__
MAX_ITERATIONS=5``: the key path's parts joined by ``__``, see :mod:`dcbrain.config.env`);
the environment wins over the file. ``DCBRAIN_CONFIG`` names the file when no path is given.
"""

from __future__ import annotations

import os
import tomllib
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    HttpUrl,
    NonNegativeFloat,
    NonNegativeInt,
    PositiveFloat,
    PositiveInt,
    StrictBool,
    model_validator,
)
from pydantic import ValidationError as PydanticValidationError

from dcbrain.approvals import DEFAULT_APPROVAL_TIMEOUT_S
from dcbrain.config.env import environment_values, has_variables, merged
from dcbrain.exceptions import ConfigError as ConfigError
from dcbrain.exceptions import TFError
from dcbrain.mcp.limits import (
    DEFAULT_MAX_LIST_BYTES,
    DEFAULT_MAX_LIST_PAGES,
    DEFAULT_MAX_MESSAGE_BYTES,
    DEFAULT_MAX_TOOLS,
)

DEFAULT_CONFIG_FILE = "dcbrain.toml"
#: The environment variable naming the config file when no path is given.
CONFIG_FILE_ENV = "DCBRAIN_CONFIG"
#: ``Config.origins``' value for a key the file sets.
FROM_FILE = "file"
LOCAL_LLM_NAME = "local"


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class LLMConfig(_Section):
    """One named LLM: an OpenAI-compatible endpoint or the embedded local model."""

    provider: Literal["openai", "local"] = "openai"
    model: str | None = None
    base_url: HttpUrl | None = None
    api_key_env: str | None = "OPENAI_API_KEY"
    api_key: str | None = None
    timeout: PositiveFloat = 60.0
    max_retries: int = Field(default=2, ge=0)
    max_output_tokens: PositiveInt = 4096
    structured_output: Literal["json_schema", "json_object", "prompt"] = "json_schema"
    #: Ask for replies as a stream (the plan shown as it is written); off for servers that cannot.
    stream: StrictBool = True
    # the local provider
    model_path: str | None = None
    threads: PositiveInt | None = None
    context_size: PositiveInt = 8192


class RolesConfig(_Section):
    """Which named LLM plays which part; ``plan`` and ``validate`` fall back to ``default``."""

    default: str | None = None
    plan: str | None = None
    validate_: str | None = Field(default=None, alias="validate")

    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class BackoffConfig(_Section):
    """The wait between tries (:class:`~dcbrain.retries.Backoff`)."""

    initial_s: float = Field(default=0.5, ge=0)
    max_s: float = Field(default=10.0, ge=0)
    multiplier: float = Field(default=2.0, ge=1)
    jitter: bool = True


class ChainConfig(_Section):
    """A chain the planner may call by its key."""

    description: str = ""
    prompt: str = "{{ input }}"
    system_prompt: str | None = None
    #: The JSON Schema of the chain's structured output (``Chain(output_json_schema=...)``).
    output_json_schema: dict[str, Any] | None = None
    llm: str | None = None
    temperature: float | None = None
    max_tokens: PositiveInt | None = None
    timeout_s: PositiveFloat | None = None
    retries: int = Field(default=0, ge=0)
    backoff: BackoffConfig | NonNegativeFloat | None = None
    requires_approval: bool = False
    approval_timeout_s: PositiveFloat | None = None


class ToolConfig(_Section):
    """``[tool.NAME]``: options of the tools file's tool ``NAME`` (unset: the tool's own)."""

    requires_approval: bool | None = None
    approval_timeout_s: PositiveFloat | None = None
    timeout_s: PositiveFloat | None = None
    retries: NonNegativeInt | None = None
    backoff: BackoffConfig | NonNegativeFloat | None = None
    reuse: bool | None = None
    side_effects: bool | None = None
    trusted_output: bool | None = None
    #: Fields of the tool's result records that are trusted data (``["id_"]``).
    trusted_fields: list[str] | None = None
    trusted_args: list[str] | None = None
    #: ``ask``: a call whose ``trusted_args`` carry untrusted data goes to a person.
    on_violation: Literal["deny", "ask"] | None = None


class MCPServerConfig(_Section):
    """An MCP server whose tools plans may call: ``command`` (stdio) or ``url`` (HTTP)."""

    command: list[str] | str | None = None
    url: HttpUrl | None = None
    env: dict[str, str] = Field(default_factory=dict)
    cwd: str | None = None
    prefix: str = ""
    startup_timeout: PositiveFloat = 30.0
    call_timeout: PositiveFloat = 300.0
    max_message_bytes: PositiveInt = DEFAULT_MAX_MESSAGE_BYTES
    max_tools: PositiveInt = DEFAULT_MAX_TOOLS
    max_list_pages: PositiveInt = DEFAULT_MAX_LIST_PAGES
    max_list_bytes: PositiveInt = DEFAULT_MAX_LIST_BYTES
    timeout_s: PositiveFloat | None = None
    tool_timeout_s: dict[str, PositiveFloat] = Field(default_factory=dict)
    retries: int = Field(default=2, ge=0)
    backoff: BackoffConfig | NonNegativeFloat | None = None
    #: Tool-name patterns (``fnmatch``) whose calls wait for a person's decision.
    require_approval: list[str] = Field(default_factory=list)
    #: Tool-name patterns of read-only tools (``true``: all); unset: none (a server's
    #: ``readOnlyHint`` is not heeded).
    read_only: list[str] | StrictBool | None = None
    #: Tool-name patterns whose results are trusted data (``true``: all).
    trusted_output: list[str] | StrictBool = False
    #: Tool-name pattern → the fields of the records it returns that are trusted data.
    trusted_fields: dict[str, list[str]] = Field(default_factory=dict)
    #: Tool-name pattern → the arguments that may carry trusted data only.
    trusted_args: dict[str, list[str]] = Field(default_factory=dict)


class MemoryConfig(_Section):
    """The SQLite memory; ``path = ""`` turns memory off."""

    path: str = "dcbrain.db"


class BrainConfig(_Section):
    max_iterations: PositiveInt = 10
    max_tokens: PositiveInt = 128_000
    timeout: float = Field(default=1200.0, ge=0)
    validate_direct_answers: bool = False
    #: Seconds a call waits for a person's decision (a tool's or chain's own wins).
    approval_timeout_s: PositiveFloat = DEFAULT_APPROVAL_TIMEOUT_S
    #: ``off``, ``enforce`` or ``strict``; unset: enforce once a tool declares
    #: ``trusted_args`` (see docs/security.md).
    policy_mode: Literal["off", "enforce", "strict"] | None = None
    #: ``false``: planning prompts show untrusted content as typed placeholders.
    show_untrusted_to_planner: bool = True
    #: ``ask``: a call whose ``trusted_args`` carry untrusted data goes to a person
    #: instead of being refused (a tool's own ``on_violation`` wins).
    on_violation: Literal["deny", "ask"] = "deny"
    #: Start plans' read-only calls while the planner writes the plan; unset: when the
    #: plan LLM streams.
    eager: bool | None = None
    #: The type of every run's answer, ``"module:Class"`` (an importable module, or a
    #: ``.py`` file relative to the config, a tools file for one): the answer is
    #: validated into it before the run succeeds; ``GET /v1/schema`` shows its schema.
    output_type: str | None = Field(default=None, pattern=r"^[^:\s]+:[A-Za-z_][\w.]*$")


class TelemetryConfig(_Section):
    """Traces and metrics of ``serve``, ``worker`` and ``ask``."""

    #: An OTLP/HTTP receiver's base URL (``/v1/traces`` is added), as
    #: ``OTEL_EXPORTER_OTLP_ENDPOINT``; unset: the standard variables decide.
    otlp_endpoint: HttpUrl | None = None
    #: ``/metrics`` without the API token (for a scraper inside a trusted network).
    metrics_open: bool = False
    #: Each chain/tool call's span carries its arguments (``dcbrain.call.arguments``,
    #: JSON, clipped); off: spans and log lines never carry them.
    span_arguments: bool = False


class RetentionConfig(_Section):
    """How long finished runs are kept: ``days`` or ``hours`` (fractions allowed); neither
    keeps them for good."""

    days: PositiveFloat | None = None
    hours: PositiveFloat | None = None
    check_every_minutes: PositiveFloat = 60.0

    @model_validator(mode="after")
    def _one_period(self) -> RetentionConfig:
        if self.days is not None and self.hours is not None:
            raise ValueError("[retention] takes days or hours, not both")
        return self

    @property
    def keep_s(self) -> float | None:
        """How long finished runs are kept, in seconds (``None``: for good)."""
        if self.days is not None:
            return self.days * 86400.0
        return None if self.hours is None else self.hours * 3600.0


class Config(_Section):
    """The whole ``dcbrain.toml``. ``base_dir`` anchors its relative paths."""

    tools: list[str] = Field(default_factory=list)
    #: ``[tool.NAME]`` tables: options of the tools files' tools, by tool name.
    tool: dict[str, ToolConfig] = Field(default_factory=dict)
    llm: dict[str, LLMConfig] = Field(default_factory=dict)
    roles: RolesConfig = Field(default_factory=RolesConfig)
    chains: dict[str, ChainConfig] = Field(default_factory=dict)
    mcp: dict[str, MCPServerConfig] = Field(default_factory=dict)
    memory: MemoryConfig = Field(default_factory=MemoryConfig)
    brain: BrainConfig = Field(default_factory=BrainConfig)
    retention: RetentionConfig = Field(default_factory=RetentionConfig)
    telemetry: TelemetryConfig = Field(default_factory=TelemetryConfig)
    base_dir: Path = Field(default_factory=Path.cwd, exclude=True)
    source: str = Field(default="(defaults)", exclude=True)
    #: Keys the file still uses under an old name (each one's message says the new name).
    deprecations: list[str] = Field(default_factory=list, exclude=True)
    #: Where each key path that is not a default came from: :data:`FROM_FILE`, or the
    #: name of the environment variable that set it (which wins over the file).
    origins: dict[str, str] = Field(default_factory=dict, exclude=True)

    def resolve(self, relative: str) -> Path:
        path = Path(relative).expanduser()
        return path if path.is_absolute() else self.base_dir / path

    def role(self, name: Literal["default", "plan", "validate"]) -> str | None:
        """The LLM name that plays ``name`` (after the fallback to ``default``)."""
        chosen = {"default": self.roles.default, "plan": self.roles.plan,
                  "validate": self.roles.validate_}[name]
        if chosen is None:
            chosen = self.roles.default
        if chosen is None and len(self.llm) == 1:
            chosen = next(iter(self.llm))
        return chosen


def load_config(path: str | Path, *, environ: Mapping[str, str] | None = None) -> Config:
    """Read and validate a config file, with the ``DCBRAIN_…`` variables of ``environ``
    (default ``os.environ``) over it; raise :class:`ConfigError` naming each bad key."""
    path = Path(path)
    source = str(path)
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(source, ["file not found (create one with `dcbrain init`)"]) from None
    except OSError as exc:
        raise ConfigError(source, [f"cannot read: {exc.strerror or exc}"]) from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(source, [f"invalid TOML: {exc}"]) from None
    return config_from_dict(raw, base_dir=path.resolve().parent, source=source,
                            environ=os.environ if environ is None else environ)


def config_file(path: str | Path | None = None,
                environ: Mapping[str, str] | None = None) -> tuple[Path | None, str]:
    """The config file to read, and why: ``"given"`` (``path``), :data:`CONFIG_FILE_ENV`
    (that variable names it), ``"default"`` (``./dcbrain.toml`` exists) or ``"none"``."""
    environ = os.environ if environ is None else environ
    if path is not None:
        return Path(path), "given"
    if environ.get(CONFIG_FILE_ENV):
        return Path(environ[CONFIG_FILE_ENV]), CONFIG_FILE_ENV
    if Path(DEFAULT_CONFIG_FILE).is_file():
        return Path(DEFAULT_CONFIG_FILE), "default"
    return None, "none"


def find_config(path: str | Path | None = None, *,
                environ: Mapping[str, str] | None = None) -> Config:
    """The config ``dcbrain ask`` and ``dcbrain serve`` use, with the environment's keys.

    ``path`` when given (it must exist); else the file ``DCBRAIN_CONFIG`` names; else
    ``./dcbrain.toml`` when it exists; else the defaults: no config file, every role
    played by the embedded local model.
    """
    environ = os.environ if environ is None else environ
    chosen, _ = config_file(path, environ)
    if chosen is not None:
        return load_config(chosen, environ=environ)
    return config_from_dict({}, base_dir=Path.cwd(), source=Config().source, environ=environ)


def config_from_dict(raw: dict[str, Any], *, base_dir: Path, source: str,
                     environ: Mapping[str, str] | None = None) -> Config:
    """Validate an already-parsed config (as from TOML), with the ``DCBRAIN_…`` variables
    of ``environ`` over it (none when not given)."""
    for key in ("base_dir", "source", "deprecations", "origins"):
        if key in raw:
            raise ConfigError(source, [f"{key}: Extra inputs are not permitted"])
    raw, deprecations = _renamed_keys(raw, source)
    origins = dict.fromkeys(_key_paths(raw), FROM_FILE)
    if environ and has_variables(environ):
        try:
            from_environment, variables = environment_values(Config, environ or {})
        except ValueError as exc:
            raise ConfigError(source, [str(exc)]) from None
        raw = merged(raw, from_environment, variables)
        origins.update(variables)
    try:
        config = Config.model_validate({**raw, "base_dir": base_dir, "source": source,
                                        "deprecations": deprecations, "origins": origins})
    except PydanticValidationError as exc:
        raise ConfigError(source, [_describe(error, origins)
                                   for error in exc.errors()]) from None
    problems = _cross_references(config)
    if problems:
        raise ConfigError(source, problems)
    return config


def _key_paths(raw: Mapping[str, Any], prefix: str = "") -> list[str]:
    """The dotted path of every value (not table) in ``raw``."""
    paths: list[str] = []
    for key, value in raw.items():
        if isinstance(value, Mapping) and value:
            paths.extend(_key_paths(value, f"{prefix}{key}."))
        else:
            paths.append(f"{prefix}{key}")
    return paths


def origin_of(path: str, origins: Mapping[str, str]) -> str | None:
    """Where the key ``path`` came from: its own entry, its table's (a variable that
    set a whole table as JSON), else its values' (a table the file wrote out)."""
    parts = path.split(".")
    for end in range(len(parts), 0, -1):
        found = origins.get(".".join(parts[:end]))
        if found is not None:
            return found
    below = [origin for key, origin in origins.items() if key.startswith(path + ".")]
    return next((o for o in below if o != FROM_FILE), below[0] if below else None)


#: Chain keys renamed to the name Python uses (old → new); the old one is still read.
_RENAMED_CHAIN_KEYS = {"output_schema": "output_json_schema"}


def _renamed_keys(raw: dict[str, Any], source: str) -> tuple[dict[str, Any], list[str]]:
    """``raw`` with old chain keys under their new names, and a deprecation per old key."""
    chains = raw.get("chains")
    if not isinstance(chains, dict):
        return raw, []
    deprecations: list[str] = []
    problems: list[str] = []
    renamed: dict[str, Any] = {}
    for name, chain in chains.items():
        if isinstance(chain, dict):
            chain = dict(chain)
            for old, new in _RENAMED_CHAIN_KEYS.items():
                if old not in chain:
                    continue
                if new in chain:
                    problems.append(f"chains.{name}: both {old} and {new}; keep {new}")
                    continue
                chain[new] = chain.pop(old)
                deprecations.append(f"chains.{name}.{old} is deprecated: call it {new}")
        renamed[name] = chain
    if problems:
        raise ConfigError(source, problems)
    for message in deprecations:
        warnings.warn(f"{source}: {message}", DeprecationWarning, stacklevel=4)
    return {**raw, "chains": renamed}, deprecations


def _describe(error: Any, origins: Mapping[str, str]) -> str:
    location = ".".join(str(part) for part in error["loc"]) or "(top level)"
    origin = origin_of(location, origins) if error["loc"] else None
    variable = f" (from {origin})" if origin not in (None, FROM_FILE) else ""
    return f"{location}: {error['msg']}{variable}"


def _cross_references(config: Config) -> list[str]:
    known = ", ".join(config.llm) or "none"
    problems: list[str] = []
    roles = {"default": config.roles.default, "plan": config.roles.plan,
             "validate": config.roles.validate_}
    for role, name in roles.items():
        if name is not None and name not in config.llm:
            problems.append(f"roles.{role}: unknown LLM {name!r} (declared: {known})")
    if len(config.llm) > 1 and config.role("default") is None:
        problems.append("roles.default: required when more than one LLM is declared")
    for chain_name, chain in config.chains.items():
        if not chain_name.isidentifier() or chain_name.startswith("_"):
            problems.append(f"chains.{chain_name}: a chain name must be an identifier "
                            "not starting with '_'")
        if chain.llm is not None and chain.llm not in config.llm:
            problems.append(f"chains.{chain_name}.llm: unknown LLM {chain.llm!r} "
                            f"(declared: {known})")
    for name, llm in config.llm.items():
        if llm.provider == "openai" and not llm.model:
            problems.append(f"llm.{name}.model: required for provider 'openai'")
    for name, server in config.mcp.items():
        if (server.command is None) == (server.url is None):
            problems.append(f"mcp.{name}: give command = [...] (stdio) or url = \"...\" (HTTP)")
        elif server.command is not None and not server.command:
            problems.append(f"mcp.{name}.command: empty")
    for index, tool_file in enumerate(config.tools):
        if not config.resolve(tool_file).is_file():
            problems.append(f"tools.{index}: file not found: {config.resolve(tool_file)}")
    problems.extend(_chain_problems(config))
    return problems


def _chain_problems(config: Config) -> list[str]:
    """What building each chain would refuse: its templates and its output schema.

    Each part is built on its own (with an LLM that is never called) so that a problem
    names its key, e.g. ``chains.summarize.prompt``.
    """
    from dcbrain.chain import Chain
    from dcbrain.llm.testing import ScriptedLLM

    llm = ScriptedLLM([])  # never called: only the chain's construction is checked
    problems: list[str] = []
    for name, spec in config.chains.items():
        parts: dict[str, dict[str, Any]] = {
            "prompt": {"prompt": spec.prompt},
            "system_prompt": {"system_prompt": spec.system_prompt},
            "output_json_schema": {"output_json_schema": spec.output_json_schema},
        }
        for key, arguments in parts.items():
            if next(iter(arguments.values())) is None:
                continue
            try:
                Chain(name=name or "_", llm=llm, **arguments)
            except (TFError, ValueError, TypeError) as exc:
                problems.append(f"chains.{name}.{key}: {_without_chain_prefix(str(exc), name)}")
    return problems


def _without_chain_prefix(message: str, name: str) -> str:
    for prefix in (f"chain {name!r}: ", "output_json_schema is "):
        if message.startswith(prefix):
            message = message[len(prefix):]
    return message


def environment_problems(config: Config) -> list[str]:
    """Settings that depend on this machine's environment: API key variables that are
    not set. ``build_brain`` fails on them; ``dcbrain config check`` only warns."""
    return [
        f"llm.{name}.api_key_env: environment variable {spec.api_key_env} is not set"
        for name, spec in config.llm.items()
        if spec.provider == "openai" and spec.api_key is None and spec.api_key_env
        and not os.environ.get(spec.api_key_env)
    ]
