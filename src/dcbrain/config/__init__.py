"""Configuration: ``dcbrain.toml`` and the environment, and what is built from them.

- :mod:`~dcbrain.config.schema`: the file's schema (:class:`Config`, :func:`load_config`).
- :mod:`~dcbrain.config.env`: ``DCBRAIN_…`` environment variables over the file.
- :mod:`~dcbrain.config.composition`: LLMs, chains, tools, MCP connections, memory and the
  brain, built from a :class:`Config` (``build_brain(config)``, re-exported here lazily:
  importing the schema does not import the brain).
- :mod:`~dcbrain.config.runtime`: the composition root every command and surface starts
  from (:class:`~dcbrain.config.runtime.AppSettings` → ``build_runtime`` → ``Runtime``).
"""

from __future__ import annotations

from dcbrain._lazy import lazy_exports
from dcbrain.config.schema import (
    CONFIG_FILE_ENV,
    DEFAULT_CONFIG_FILE,
    FROM_FILE,
    LOCAL_LLM_NAME,
    BackoffConfig,
    BrainConfig,
    ChainConfig,
    Config,
    ConfigError,
    LLMConfig,
    MCPServerConfig,
    MemoryConfig,
    RetentionConfig,
    RolesConfig,
    TelemetryConfig,
    ToolConfig,
    config_file,
    config_from_dict,
    environment_problems,
    find_config,
    load_config,
    origin_of,
)

_BUILDING = ("build_brain", "build_chains", "build_llms", "check_tool_names",
             "connect_mcp_servers", "load_tool_file", "load_tools")

__all__ = [
    "CONFIG_FILE_ENV",
    "DEFAULT_CONFIG_FILE",
    "FROM_FILE",
    "LOCAL_LLM_NAME",
    "BackoffConfig",
    "BrainConfig",
    "ChainConfig",
    "Config",
    "ConfigError",
    "LLMConfig",
    "MCPServerConfig",
    "MemoryConfig",
    "RetentionConfig",
    "RolesConfig",
    "TelemetryConfig",
    "ToolConfig",
    "build_brain",
    "build_chains",
    "build_llms",
    "check_tool_names",
    "config_file",
    "config_from_dict",
    "connect_mcp_servers",
    "environment_problems",
    "find_config",
    "load_config",
    "load_tool_file",
    "load_tools",
    "origin_of",
]

__getattr__, __dir__ = lazy_exports(
    __name__, dict.fromkeys(_BUILDING, "dcbrain.config.composition"))
