"""``dcbrain.toml``: LLMs, roles, chains, tools, MCP servers, memory and budgets in one file.

``load_config(path)`` reads and validates the file (every error names its key path,
``dcbrain.toml: llm.main.base_url: Input should be a valid URL``); ``build_brain(config)``
turns it into a :class:`~dcbrain.brain.DCBrain`. Relative paths in the file (tools,
memory) are relative to the file. With no LLM declared, every role uses the embedded
local model (:class:`~dcbrain.llm.local.LocalLLM`).
"""

from __future__ import annotations

import importlib.util
import inspect
import os
import sys
import tomllib
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    HttpUrl,
    NonNegativeFloat,
    PositiveFloat,
    PositiveInt,
)
from pydantic import ValidationError as PydanticValidationError

from dcbrain.exceptions import ConfigError as ConfigError
from dcbrain.exceptions import TFError
from dcbrain.mcp.limits import (
    DEFAULT_MAX_LIST_BYTES,
    DEFAULT_MAX_LIST_PAGES,
    DEFAULT_MAX_MESSAGE_BYTES,
    DEFAULT_MAX_TOOLS,
)
from dcbrain.retries import Backoff

if TYPE_CHECKING:
    from dcbrain.brain import DCBrain
    from dcbrain.chain import Chain
    from dcbrain.llm import ChatLLM
    from dcbrain.mcp import MCPTools
    from dcbrain.memory import Memory
    from dcbrain.tools import Tool

DEFAULT_CONFIG_FILE = "dcbrain.toml"
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
    output_schema: dict[str, Any] | None = None
    llm: str | None = None
    temperature: float | None = None
    max_tokens: PositiveInt | None = None
    retries: int = Field(default=0, ge=0)
    backoff: BackoffConfig | NonNegativeFloat | None = None


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
    retries: int = Field(default=2, ge=0)
    backoff: BackoffConfig | NonNegativeFloat | None = None


class MemoryConfig(_Section):
    """The SQLite memory; ``path = ""`` turns memory off."""

    path: str = "dcbrain.db"


class BrainConfig(_Section):
    max_iterations: PositiveInt = 10
    max_tokens: PositiveInt = 128_000
    timeout: float = Field(default=1200.0, ge=0)
    validate_direct_answers: bool = False


class Config(_Section):
    """The whole ``dcbrain.toml``. ``base_dir`` anchors its relative paths."""

    tools: list[str] = Field(default_factory=list)
    llm: dict[str, LLMConfig] = Field(default_factory=dict)
    roles: RolesConfig = Field(default_factory=RolesConfig)
    chains: dict[str, ChainConfig] = Field(default_factory=dict)
    mcp: dict[str, MCPServerConfig] = Field(default_factory=dict)
    memory: MemoryConfig = Field(default_factory=MemoryConfig)
    brain: BrainConfig = Field(default_factory=BrainConfig)
    base_dir: Path = Field(default_factory=Path.cwd, exclude=True)
    source: str = Field(default="(defaults)", exclude=True)

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


def load_config(path: str | Path) -> Config:
    """Read and validate a config file; raise :class:`ConfigError` naming each bad key."""
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
    return config_from_dict(raw, base_dir=path.resolve().parent, source=source)


def find_config(path: str | Path | None = None) -> Config:
    """The config ``dcbrain ask`` and ``dcbrain serve`` use.

    ``path`` when given (it must exist); else ``./dcbrain.toml`` when it exists; else the
    defaults: no config file, every role played by the embedded local model.
    """
    if path is not None:
        return load_config(path)
    if Path(DEFAULT_CONFIG_FILE).is_file():
        return load_config(DEFAULT_CONFIG_FILE)
    return Config()


def config_from_dict(raw: dict[str, Any], *, base_dir: Path, source: str) -> Config:
    """Validate an already-parsed config (as from TOML)."""
    for key in ("base_dir", "source"):
        if key in raw:
            raise ConfigError(source, [f"{key}: Extra inputs are not permitted"])
    try:
        config = Config.model_validate({**raw, "base_dir": base_dir, "source": source})
    except PydanticValidationError as exc:
        raise ConfigError(source, [_describe(error) for error in exc.errors()]) from None
    problems = _cross_references(config)
    if problems:
        raise ConfigError(source, problems)
    return config


def _describe(error: Any) -> str:
    location = ".".join(str(part) for part in error["loc"]) or "(top level)"
    return f"{location}: {error['msg']}"


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
            "output_schema": {"output_json_schema": spec.output_schema},
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


def check_tool_names(config: Config, tools: Mapping[str, Callable[..., Any] | Tool],
                     servers: Sequence[MCPTools] = ()) -> None:
    """Raise :class:`ConfigError` when two things a plan calls share a name.

    A plan's names resolve in a fixed order: the tf_plan builtins, then the chains and
    the tool files' functions, then the MCP servers' tools (in ``servers``). Nothing may
    take a name from what comes before it: a plan could not tell which one it calls, and
    a server could receive calls (and data) meant for a trusted tool.
    """
    from dcbrain.tfplan.checker import BUILTIN_NAMES

    problems: list[str] = []
    taken: dict[str, str] = {}
    for name in config.chains:
        if name in BUILTIN_NAMES:
            problems.append(f"chains.{name}: clashes with the tf_plan builtin {name}")
        elif name in tools:
            problems.append(f"chains.{name}: a tool of the same name is defined in "
                            f"{_tool_file(config, tools[name])}; rename one of them")
        taken[name] = f"chain {name!r}"
    for name, item in tools.items():
        described = f"local tool {name!r} from {_tool_file(config, item)}"
        if name in BUILTIN_NAMES:
            problems.append(f"tools: {described} clashes with the tf_plan builtin {name}")
        taken.setdefault(name, described)
    for server in servers:
        hint = f'give the server a prefix (prefix = "{server.name}_")'
        for tool in server:
            name = tool.name
            if name in BUILTIN_NAMES:
                problems.append(f"mcp.{server.name}: tool {name!r} clashes with the tf_plan "
                                f"builtin {name}; {hint}")
            elif name.startswith("_"):
                problems.append(f"mcp.{server.name}: tool {name!r} cannot be called from "
                                f"plans (names starting with '_' are reserved); {hint}")
            elif name in taken:
                problems.append(f"mcp.{server.name}: tool {name!r} clashes with "
                                f"{taken[name]}; rename one, or {hint}")
            else:
                taken[name] = f"mcp.{server.name} tool {name!r}"
    if problems:
        raise ConfigError(config.source, problems)


def _tool_file(config: Config, item: Callable[..., Any] | Tool) -> str:
    """The tool file that defines ``item``, as the config names it."""
    from dcbrain.tools import Tool

    func = item.func if isinstance(item, Tool) else item
    code = getattr(func, "__code__", None)
    if code is None:
        return "the tool files"
    path = Path(code.co_filename)
    for tool_file in config.tools:
        if config.resolve(tool_file).resolve() == path.resolve():
            return tool_file
    return str(path)


def environment_problems(config: Config) -> list[str]:
    """Settings that depend on this machine's environment: API key variables that are
    not set. ``build_brain`` fails on them; ``dcbrain config check`` only warns."""
    return [
        f"llm.{name}.api_key_env: environment variable {spec.api_key_env} is not set"
        for name, spec in config.llm.items()
        if spec.provider == "openai" and spec.api_key is None and spec.api_key_env
        and not os.environ.get(spec.api_key_env)
    ]


# -- tools -------------------------------------------------------------------------------
def load_tool_file(path: str | Path) -> dict[str, Callable[..., Any]]:
    """The public functions defined in the Python file ``path``, by name.

    Functions imported into the file, and names starting with ``_``, are not tools.
    """
    path = Path(path)
    if not path.is_file():
        raise ConfigError(str(path), ["tools file not found"])
    module_name = f"dcbrain_tools_{abs(hash(str(path.resolve())))}"
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise ConfigError(str(path), ["cannot load as a Python module"])
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        sys.modules.pop(module_name, None)
        raise ConfigError(str(path), [f"importing failed: {type(exc).__name__}: {exc}"]) from None
    return {
        name: value
        for name, value in vars(module).items()
        if not name.startswith("_")
        and inspect.isfunction(value)
        and value.__module__ == module_name
    }


def connect_mcp_servers(config: Config) -> list[MCPTools]:
    """Start (or reach) every ``[mcp.NAME]`` server; :class:`ConfigError` naming the one
    that failed (the ones already started are stopped). A stdio server runs in the
    config file's folder unless ``cwd`` says otherwise."""
    from dcbrain.mcp import MCPTools, TFMCPError

    servers: list[MCPTools] = []
    for name, spec in config.mcp.items():
        server = MCPTools(
            command=spec.command, url=str(spec.url) if spec.url is not None else None,
            name=name, env=spec.env, cwd=config.resolve(spec.cwd or "."), prefix=spec.prefix,
            startup_timeout=spec.startup_timeout, call_timeout=spec.call_timeout,
            max_message_bytes=spec.max_message_bytes, max_tools=spec.max_tools,
            max_list_pages=spec.max_list_pages, max_list_bytes=spec.max_list_bytes,
            retries=spec.retries, backoff=_backoff(spec.backoff),
        )
        try:
            server.connect()
        except TFMCPError as exc:
            for started in servers:
                started.close()
            raise ConfigError(config.source, [f"mcp.{name}: {exc}"]) from None
        servers.append(server)
    return servers


def load_tools(config: Config) -> dict[str, Callable[..., Any]]:
    """Every tool of the config's tool files, by name; two files defining one name are
    refused, naming both."""
    tools: dict[str, Callable[..., Any]] = {}
    defined_in: dict[str, str] = {}
    problems: list[str] = []
    for tool_file in config.tools:
        for name, func in load_tool_file(config.resolve(tool_file)).items():
            if name in defined_in:
                problems.append(f"tools: {name!r} is defined in {defined_in[name]} and in "
                                f"{tool_file}; rename one of them")
            defined_in.setdefault(name, tool_file)
            tools.setdefault(name, func)
    if problems:
        raise ConfigError(config.source, problems)
    return tools


# -- building ----------------------------------------------------------------------------
def build_llms(config: Config) -> dict[str, ChatLLM]:
    """One LLM object per declared name (the embedded model when none is declared)."""
    from dcbrain.llm import OpenAILLM
    from dcbrain.llm.local import LocalLLM, LocalModelUnavailable, ensure_local_model

    if not config.llm:
        try:
            ensure_local_model()
        except LocalModelUnavailable as exc:
            raise ConfigError(config.source, [f"llm: none declared, so the embedded local "
                                              f"model is used, but {exc}"]) from None
        return {LOCAL_LLM_NAME: LocalLLM()}
    llms: dict[str, ChatLLM] = {}
    problems: list[str] = []
    for name, spec in config.llm.items():
        if spec.provider == "local":
            if spec.model_path is None:
                try:
                    ensure_local_model()
                except LocalModelUnavailable as exc:
                    problems.append(f"llm.{name}.provider: {exc}")
                    continue
            llms[name] = LocalLLM(
                spec.model_path,
                threads=spec.threads,
                context_size=spec.context_size,
                max_output_tokens=min(spec.max_output_tokens, 1024),
            )
            continue
        api_key = spec.api_key
        if api_key is None and spec.api_key_env:
            api_key = os.environ.get(spec.api_key_env)
            if not api_key:
                continue  # reported by environment_problems below
        llms[name] = OpenAILLM(
            str(spec.model),
            base_url=str(spec.base_url) if spec.base_url is not None else None,
            api_key=api_key or "none",
            timeout=spec.timeout,
            max_retries=spec.max_retries,
            max_output_tokens=spec.max_output_tokens,
            structured_output=spec.structured_output,
        )
    problems.extend(environment_problems(config))
    if problems:
        raise ConfigError(config.source, problems)
    return llms


def build_chains(config: Config, llms: dict[str, ChatLLM], default: ChatLLM) -> dict[str, Chain]:
    from dcbrain.chain import Chain

    return {
        name: Chain(
            name=name,
            description=spec.description,
            llm=llms[spec.llm] if spec.llm is not None else default,
            prompt=spec.prompt,
            system_prompt=spec.system_prompt,
            output_json_schema=spec.output_schema,
            temperature=spec.temperature,
            max_tokens=spec.max_tokens,
            retries=spec.retries,
            backoff=_backoff(spec.backoff),
        )
        for name, spec in config.chains.items()
    }


def _backoff(spec: BackoffConfig | float | None) -> Backoff | float | None:
    if isinstance(spec, BackoffConfig):
        return Backoff(**spec.model_dump())
    return spec


def build_brain(config: Config, *, trace_path: str | Path | None = None,
                memory: Memory | None = None) -> DCBrain:
    """The :class:`DCBrain` the config describes (LLMs, roles, chains, tools, memory, budgets).

    ``memory`` replaces the config's SQLite file (workers share a PostgreSQL memory).
    """
    from dcbrain.brain import DCBrain
    from dcbrain.brain.local_planner import LocalPlanner
    from dcbrain.llm.local import LocalLLM
    from dcbrain.memory import SQLiteMemory
    from dcbrain.tools import Tool

    llms = build_llms(config)
    tools: dict[str, Callable[..., Any] | Tool] = dict(load_tools(config))
    servers = connect_mcp_servers(config)
    try:
        check_tool_names(config, tools, servers)
    except ConfigError:
        for server in servers:
            server.close()
        raise
    for server in servers:
        tools.update((tool.name, tool) for tool in server)
    if not config.llm:
        default = plan = validate = llms[LOCAL_LLM_NAME]
    else:
        default = llms[str(config.role("default"))]
        plan = llms[str(config.role("plan"))]
        validate = llms[str(config.role("validate"))]
    planner = None
    if isinstance(plan, LocalLLM):
        # A small local model plans only with a grammar and close few-shot examples; as a
        # validator (and in chains) it decodes with the request's JSON schema as grammar,
        # which the plain LocalLLM does by itself.
        planner = LocalPlanner(plan, {name: item.func if isinstance(item, Tool) else item
                                      for name, item in tools.items()})
    if memory is None and config.memory.path:
        memory = SQLiteMemory(str(config.resolve(config.memory.path)))
    return DCBrain(
        spec_chains=build_chains(config, llms, default),
        default_llm=default,
        default_plan_llm=plan,
        default_validate_llm=validate,
        tools=list(tools.values()),
        memory=memory,
        max_iterations=config.brain.max_iterations,
        max_tokens=config.brain.max_tokens,
        timeout=config.brain.timeout,
        validate_direct_answers=config.brain.validate_direct_answers,
        trace_path=str(trace_path) if trace_path is not None else None,
        planner=planner,
    )
