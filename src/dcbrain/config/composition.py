"""The composition root: the objects a ``dcbrain.toml`` describes, built once per process.

:mod:`dcbrain.config` says what a valid file is; this module turns a valid
:class:`~dcbrain.config.Config` into LLMs, chains, tools, MCP connections, memory and the
:class:`~dcbrain.brain.DCBrain` every surface runs. Every command builds through here.
"""

from __future__ import annotations

import copy
import importlib.util
import inspect
import os
import sys
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dcbrain.config import (
    LOCAL_LLM_NAME,
    BackoffConfig,
    Config,
    ConfigError,
    ToolConfig,
    environment_problems,
)
from dcbrain.retries import Backoff

if TYPE_CHECKING:
    from dcbrain.brain import DCBrain
    from dcbrain.chain import Chain
    from dcbrain.llm import ChatLLM
    from dcbrain.mcp import MCPTools
    from dcbrain.memory import Memory
    from dcbrain.tools import Tool

#: Where a server's or worker's runs are stored when the config turns memory off.
FALLBACK_DB = "dcbrain-server.db"


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


# -- the answer's type ------------------------------------------------------------------
def load_output_type(config: Config) -> Any:
    """The type ``[brain] output_type`` names (``None`` when unset): ``"module:Class"``,
    the module importable (the config's folder first) or a ``.py`` file relative to the
    config (a tools file's classes too); a dotted name reaches a nested class."""
    spec = config.brain.output_type
    if spec is None:
        return None
    where, _, name = spec.rpartition(":")
    key = "brain.output_type"
    if where.endswith(".py"):
        path = config.resolve(where)
        if not path.is_file():
            raise ConfigError(config.source, [f"{key}: {spec!r}: no file {path}"])
        module: Any = _python_file(path)
    else:
        base = str(config.base_dir)
        added = base not in sys.path
        if added:
            sys.path.insert(0, base)
        try:
            module = importlib.import_module(where)
        except Exception as exc:
            raise ConfigError(config.source, [
                f"{key}: {spec!r}: importing {where} failed: {type(exc).__name__}: {exc}"
            ]) from None
        finally:
            if added:
                sys.path.remove(base)
    found: Any = module
    for part in name.split("."):
        found = getattr(found, part, None)
        if found is None:
            raise ConfigError(config.source, [f"{key}: {spec!r}: {where} has no {name}"])
    if not isinstance(found, type) and typing.get_origin(found) is None:
        raise ConfigError(config.source, [
            f"{key}: {spec!r}: {name} is a {type(found).__name__}, not a class (a pydantic "
            "model, a dataclass, a TypedDict or any type pydantic validates)"])
    from dcbrain.brain.output import OutputType

    try:
        OutputType(found)
    except TypeError as exc:
        raise ConfigError(config.source, [f"{key}: {spec!r}: {exc}"]) from None
    return found


def _python_file(path: Path, *, fresh: bool = False) -> Any:
    """The module of the Python file ``path``: the one loaded already (a tools file's
    classes are those of the module its tools come from) unless ``fresh``."""
    module_name = f"dcbrain_tools_{abs(hash(str(path.resolve())))}"
    loaded = sys.modules.get(module_name)
    if loaded is not None and not fresh:
        return loaded
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
    return module


# -- tools -------------------------------------------------------------------------------
def load_tool_file(path: str | Path) -> dict[str, Callable[..., Any] | Tool]:
    """The tools the Python file ``path`` defines, by tool name: its ``Tool(...)`` objects
    (each under its own name, with its own options) and its other public functions.

    Functions imported into the file, names starting with ``_`` and functions a ``Tool``
    of the file wraps (they are that tool) are not tools of their own.
    """
    from dcbrain.tools import Tool

    path = Path(path)
    if not path.is_file():
        raise ConfigError(str(path), ["tools file not found"])
    module = _python_file(path, fresh=True)
    module_name = module.__name__
    public = {name: value for name, value in vars(module).items() if not name.startswith("_")}
    declared = [value for value in public.values() if isinstance(value, Tool)]
    wrapped = {id(tool.func) for tool in declared}
    tools: dict[str, Callable[..., Any] | Tool] = {}
    problems: list[str] = []
    for variable, tool in ((name, value) for name, value in public.items()
                           if isinstance(value, Tool)):
        if tool.name in tools and tools[tool.name] is not tool:
            problems.append(f"{variable}: a second Tool named {tool.name!r}; "
                            "give one of them another name")
        tools.setdefault(tool.name, tool)
    functions = {
        name: value for name, value in public.items()
        if inspect.isfunction(value) and value.__module__ == module_name
        and id(value) not in wrapped
    }
    for name in functions.keys() & tools.keys():
        problems.append(f"{name}: both a function and a Tool of that name; rename one")
    problems.extend(_tool_problems(functions))
    if problems:
        raise ConfigError(str(path), problems)
    return {**tools, **{name: func for name, func in functions.items() if name not in tools}}


def _tool_problems(functions: Mapping[str, Callable[..., Any]]) -> list[str]:
    """What making each function a tool refuses (a parameter with no JSON schema, ...)."""
    from dcbrain.exceptions import TFToolError
    from dcbrain.tools import Tool

    problems: list[str] = []
    for func in functions.values():
        try:
            Tool(func)  # derived once per function: the brain's own Tool reuses it
        except TFToolError as exc:
            problems.append(str(exc))
    return problems


def connect_mcp_servers(config: Config) -> list[MCPTools]:
    """Start (or reach) every ``[mcp.NAME]`` server; :class:`ConfigError` naming the one
    that failed (the ones already started are stopped). A stdio server runs in the
    config file's folder unless ``cwd`` says otherwise."""
    servers, problems = _start_mcp_servers(config, stop_at_first=True)
    if problems:
        raise ConfigError(config.source, problems)
    return servers


def mcp_server_problems(config: Config,
                        tools: Mapping[str, Callable[..., Any] | Tool]) -> list[str]:
    """Start every ``[mcp.NAME]`` server as ``ask`` would (each within its
    ``startup_timeout``), then stop it: why each one that cannot serve plans fails, and any
    clash of its tools' names with ``tools`` or the chains."""
    servers, problems = _start_mcp_servers(config, stop_at_first=False)
    try:
        check_tool_names(config, tools, servers)
    except ConfigError as exc:
        problems.extend(exc.problems)
    finally:
        for server in servers:
            server.close()
    return problems


def _start_mcp_servers(config: Config, *,
                       stop_at_first: bool) -> tuple[list[MCPTools], list[str]]:
    from dcbrain.mcp import MCPTools, TFMCPError

    servers: list[MCPTools] = []
    problems: list[str] = []
    for name, spec in config.mcp.items():
        try:
            server = MCPTools(
                command=spec.command, url=str(spec.url) if spec.url is not None else None,
                name=name, env=spec.env, cwd=config.resolve(spec.cwd or "."),
                prefix=spec.prefix, startup_timeout=spec.startup_timeout,
                call_timeout=spec.call_timeout, max_message_bytes=spec.max_message_bytes,
                max_tools=spec.max_tools, max_list_pages=spec.max_list_pages,
                max_list_bytes=spec.max_list_bytes, timeout_s=spec.timeout_s,
                tool_timeout_s=spec.tool_timeout_s, retries=spec.retries,
                backoff=_backoff(spec.backoff), require_approval=spec.require_approval,
                read_only=spec.read_only, trusted_output=spec.trusted_output,
                trusted_args=spec.trusted_args, trusted_fields=spec.trusted_fields,
            )
            server.connect()
        except (TFMCPError, TypeError, ValueError) as exc:
            problems.append(f"mcp.{name}: {exc}")
            if stop_at_first:
                for started in servers:
                    started.close()
                return [], problems
            continue
        servers.append(server)
    return servers, problems


def load_tools(config: Config) -> dict[str, Callable[..., Any] | Tool]:
    """Every tool of the config's tool files, by name, with its ``[tool.NAME]`` table's
    options; two files defining one name, or a table no file's tool has, are refused."""
    tools: dict[str, Callable[..., Any] | Tool] = {}
    defined_in: dict[str, str] = {}
    problems: list[str] = []
    for tool_file in config.tools:
        for name, func in load_tool_file(config.resolve(tool_file)).items():
            if name in defined_in:
                problems.append(f"tools: {name!r} is defined in {defined_in[name]} and in "
                                f"{tool_file}; rename one of them")
            defined_in.setdefault(name, tool_file)
            tools.setdefault(name, func)
    for name, options in config.tool.items():
        if name not in tools:
            problems.append(f"tool.{name}: no tools file defines a tool {name!r} (tools: "
                            f"{', '.join(tools) or 'none'})")
            continue
        try:
            tools[name] = configured_tool(tools[name], options)
        except (TypeError, ValueError) as exc:
            problems.append(f"tool.{name}: {exc}")
    if problems:
        raise ConfigError(config.source, problems)
    return tools


def configured_tool(item: Callable[..., Any] | Tool, options: ToolConfig) -> Tool:
    """``item`` as a :class:`Tool` with the options its ``[tool.NAME]`` table sets; the
    ones the table leaves out keep the tool's own (a ``Tool`` object) or the defaults."""
    from dcbrain.retries import RetryPolicy
    from dcbrain.tools import Tool

    tool = copy.copy(item) if isinstance(item, Tool) else Tool(item)
    given = options.model_dump(exclude_none=True)
    retry = tool.retry
    if "retries" in given or "backoff" in given:
        backoff = _backoff(options.backoff)
        retry = RetryPolicy.of(
            given.get("retries", retry.retries if retry else 0),
            retry.retry_on if retry else None,
            backoff if backoff is not None else (retry.backoff if retry else None))
    given.pop("retries", None)
    given.pop("backoff", None)
    tool.options = tool.options.merged(f"tool {tool.name!r}", **given)
    if retry is not tool.retry:
        tool.retry = retry
    return tool


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
                stream=spec.stream,
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
            stream=spec.stream,
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
            output_json_schema=spec.output_json_schema,
            temperature=spec.temperature,
            max_tokens=spec.max_tokens,
            timeout_s=spec.timeout_s,
            retries=spec.retries,
            backoff=_backoff(spec.backoff),
            requires_approval=spec.requires_approval,
            approval_timeout_s=spec.approval_timeout_s,
        )
        for name, spec in config.chains.items()
    }


def _backoff(spec: BackoffConfig | float | None) -> Backoff | float | None:
    if isinstance(spec, BackoffConfig):
        return Backoff(**spec.model_dump())
    return spec


def plan_tools(config: Config) -> tuple[dict[str, Callable[..., Any] | Tool], list[MCPTools]]:
    """What plans may call besides chains: the tool files' functions and the MCP servers'
    tools (the servers started), by name; :class:`ConfigError` on a clash."""
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
    return tools, servers


@dataclass
class PlanCallables:
    """What a plan run outside a brain (``dcbrain plan run --config``) may call."""

    chains: dict[str, Chain]
    tools: dict[str, Callable[..., Any] | Tool]
    servers: list[MCPTools]
    #: Backs ``__construct_chain``; ``None`` when the config declares no chain.
    default_llm: ChatLLM | None

    def close(self) -> None:
        for server in self.servers:
            server.close()


def build_plan_callables(config: Config) -> PlanCallables:
    """The config's chains, tools and MCP servers' tools, for plans run without a brain.

    LLMs are built only when the config declares chains (a plan that calls tools only
    needs no key and no model).
    """
    tools, servers = plan_tools(config)
    if not config.chains:
        return PlanCallables({}, tools, servers, None)
    try:
        llms = build_llms(config)
    except ConfigError:
        for server in servers:
            server.close()
        raise
    default = llms[LOCAL_LLM_NAME] if not config.llm else llms[str(config.role("default"))]
    return PlanCallables(build_chains(config, llms, default), tools, servers, default)


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
    tools, _ = plan_tools(config)
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
        approval_timeout_s=config.brain.approval_timeout_s,
        policy_mode=config.brain.policy_mode,
        on_violation=config.brain.on_violation,
        show_untrusted_to_planner=config.brain.show_untrusted_to_planner,
        eager=config.brain.eager,
        trace_path=str(trace_path) if trace_path is not None else None,
        planner=planner,
        output_type=load_output_type(config),
    )


# -- serving: the server and the workers ----------------------------------------------
def shared_memory(config: Config, db: str | None, *,
                  outage_wait_s: float = 0.0) -> Memory | None:
    """With ``--db``, conversation memory in that PostgreSQL database, shared by every
    worker and API node (``None``: the config's SQLite file, or memory turned off);
    ``outage_wait_s``: how long it waits out a database outage."""
    if db is None or not config.memory.path:
        return None
    try:
        from dcbrain.durable.setup import open_memory
    except ImportError as exc:
        raise ValueError(f"--db needs DBOS and psycopg, which cannot be imported ({exc})") \
            from None
    return open_memory(db, outage_wait_s=outage_wait_s)


def retention_periods(config: Config) -> tuple[float, float] | None:
    """``[retention]`` in seconds: how long finished runs are kept and how often they are
    pruned (``None``: kept for good)."""
    spec = config.retention
    if spec.keep_s is None:
        return None
    return spec.keep_s, spec.check_every_minutes * 60.0
