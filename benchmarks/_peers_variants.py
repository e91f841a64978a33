"""The workload of ``benchmarks/peers.py`` and one variant per framework measured on it.

Every framework answers the same question with the same three plain Python tools
(``lookup_order``, ``get_weather``, ``add``); its model is a fake that answers at once (W1,
W2) or after ``await asyncio.sleep(latency)`` (W3), so what is measured is the framework's
own cost: its loop, prompts, message objects, tool dispatch, validation and events. Each
variant imports its framework only in ``setup()``.
"""

from __future__ import annotations

import asyncio
import json
import time
import warnings
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dcbrain.tfplan.interpreter import Isolation

QUESTION = "Where is order A-17, what is the weather in Paris, and what is 2 + 21?"
ERROR_TEXT = "weather service timed out"
ORDER = {"order_id": "A-17", "status": "shipped", "items": 2}
WEATHER = {"city": "Paris", "temp_c": 21, "sky": "clear"}
FINAL_TEXT = "Order A-17 has shipped; Paris is clear at 21 C; 2 + 21 = 23."
EXPECTED_DICT = {"order": ORDER, "weather": WEATHER, "total": 23}
#: (tool, arguments) the model asks for, in order.
CALLS: list[tuple[str, dict[str, Any]]] = [
    ("lookup_order", {"order_id": "A-17"}),
    ("get_weather", {"city": "Paris"}),
    ("add", {"a": 2, "b": 21}),
]
ARGS = dict(CALLS)


class _State:
    #: each run's question differs (``(request N)``, echoed by the fake into dcbrain's
    #: plan), as with real traffic, so no cache keyed on a prompt or a plan's text is hit
    #: because the benchmark repeats itself; ``--same-text`` sets this
    same_text = False
    failures_left = 0  # get_weather raises while > 0 (W2 sets it to 1 before each run)
    weather_error: type[BaseException] = ConnectionError  # pydantic-ai: its ModelRetry
    tool_execs = 0
    tool_errors = 0
    model_calls = 0


STATE = _State()


def question(index: int) -> str:
    return f"{QUESTION} (request {0 if STATE.same_text else index})"


def request_tag(text: str) -> str:
    """The "(request N)" of a question inside ``text`` (what the fake model echoes)."""
    start = text.rfind("(request ")
    return text[start:text.index(")", start) + 1] if start >= 0 else ""


def lookup_order(order_id: str) -> dict[str, Any]:
    """Look up an order by its id.

    Args:
        order_id: the order's id, e.g. A-17
    """
    STATE.tool_execs += 1
    return {"order_id": order_id, "status": "shipped", "items": 2}


def get_weather(city: str) -> dict[str, Any]:
    """The current weather of a city.

    Args:
        city: the city's name
    """
    STATE.tool_execs += 1
    if STATE.failures_left > 0:
        STATE.failures_left -= 1
        STATE.tool_errors += 1
        raise STATE.weather_error(ERROR_TEXT)
    return {"city": city, "temp_c": 21, "sky": "clear"}


def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: the first integer
        b: the second integer
    """
    STATE.tool_execs += 1
    return a + b


TOOLS: list[Callable[..., Any]] = [lookup_order, get_weather, add]


async def _latency(seconds: float) -> None:
    if seconds:
        await asyncio.sleep(seconds)


class Variant:
    name = ""
    framework = ""
    #: what the benchmark imports of the framework (the import-time column)
    imports = ""
    #: how W3 runs concurrently: "asyncio" or "threads" (one thread per run)
    concurrency = "asyncio"
    description = ""
    latency = 0.0

    def setup(self, latency: float) -> None:
        raise NotImplementedError

    async def arun(self, index: int) -> Any:
        raise NotImplementedError

    def run_sync(self, index: int, agent: Any = None) -> Any:  # concurrency == "threads"
        raise NotImplementedError

    def new_agent(self) -> Any:  # concurrency == "threads": one agent per run in flight
        raise NotImplementedError

    def check(self, result: Any) -> None:
        assert result == FINAL_TEXT, f"{self.name}: unexpected result {result!r}"

    def build_only(self) -> None:
        """Build the agent once more (the build-cost column)."""
        self.setup(self.latency)


# -- dcbrain --------------------------------------------------------------------------

PLAN_1 = """```tf_plan
order = lookup_order(order_id="A-17")
weather = get_weather(city="Paris")
total = add(a=2, b=21)
return {"order": order, "weather": weather, "total": total}
```"""
#: The revised plan after the failure (a textually identical plan would be refused).
PLAN_2 = """```tf_plan
order = lookup_order(order_id="A-17")
weather_now = get_weather(city="Paris")
total = add(a=2, b=21)
return {"order": order, "weather": weather_now, "total": total}
```"""
VERDICT = '{"is_solved": true, "suggestion": ""}'


class DCBrainVariant(Variant):
    framework = "dcbrain"
    imports = "from dcbrain import DCBrain, ChatLLM, LLMReply, Usage"

    def __init__(self, isolation: Isolation) -> None:
        self.isolation = isolation
        where = "sandbox process, default" if isolation == "process" else "in process"
        self.name = f"dcbrain ({where})"
        self.description = (f"DCBrain(isolation={isolation!r}): plan LLM -> tf_plan calling the "
                            "3 tools -> validate LLM; W2: the plan fails, a revised plan runs")

    def setup(self, latency: float) -> None:
        from dcbrain import ChatLLM, DCBrain, LLMReply, Usage

        self.latency = latency

        class FakeLLM(ChatLLM):
            """A provider that answers at once and reports usage, as a real one does."""

            def __init__(self, reply: Callable[[list[dict[str, Any]]], str]) -> None:
                self.model = "fake"
                self.reply = reply

            async def _achat(self, messages: list[dict[str, Any]], **_: Any) -> LLMReply:
                STATE.model_calls += 1
                await _latency(latency)
                return LLMReply(content=self.reply(messages), finish_reason="stop",
                                model="fake", usage=Usage.of_call("fake", 1200, 60))

        def plan(messages: list[dict[str, Any]]) -> str:
            # the planning prompt shows the failed attempt's error once a plan failed
            text = PLAN_2 if ERROR_TEXT in messages[0]["content"] else PLAN_1
            tag = request_tag(messages[-1]["content"])  # the question is the last message
            return text.replace("```tf_plan\n", f"```tf_plan\n# {tag}\n", 1)

        self.brain = DCBrain(default_plan_llm=FakeLLM(plan),
                             default_validate_llm=FakeLLM(lambda messages: VERDICT),
                             tools=TOOLS, isolation=self.isolation)

    async def arun(self, index: int) -> Any:
        result = await self.brain.async_run(question(index), conversation_id=f"c{index}")
        return (result.status, result.reason, result.final_result)

    def check(self, result: Any) -> None:
        assert result == ("succeeded", "validated", EXPECTED_DICT), f"{self.name}: {result!r}"


# -- pydantic-ai ----------------------------------------------------------------------


class PydanticAIVariant(Variant):
    framework = "pydantic_ai"
    name = "pydantic_ai"
    imports = ("from pydantic_ai import Agent, ModelRetry; "
               "from pydantic_ai.models.function import FunctionModel; "
               "from pydantic_ai.messages import ModelResponse")
    description = ("Agent(FunctionModel): 1 model turn with 3 tool calls, then text; "
                   "W2: the tool raises ModelRetry, the model calls it again")

    def setup(self, latency: float) -> None:
        from pydantic_ai import Agent, ModelRetry
        from pydantic_ai.messages import (
            ModelResponse,
            RetryPromptPart,
            TextPart,
            ToolCallPart,
            ToolReturnPart,
        )
        from pydantic_ai.models.function import FunctionModel
        from pydantic_ai.usage import RequestUsage

        self.latency = latency
        STATE.weather_error = ModelRetry  # the framework's idiom for "tool failed, retry"

        def response(parts: list[Any]) -> ModelResponse:
            return ModelResponse(parts=parts, usage=RequestUsage(input_tokens=1200,
                                                                 output_tokens=60))

        async def model(messages: list[Any], info: Any) -> ModelResponse:
            STATE.model_calls += 1
            await _latency(latency)
            last = messages[-1].parts
            # a tool's ModelRetry comes back as a return part with outcome "retried" (older
            # releases: a RetryPromptPart)
            retry = [p for p in last if isinstance(p, RetryPromptPart)
                     or getattr(p, "outcome", "success") == "retried"]
            if retry:  # call the tool that failed again
                name = retry[0].tool_name
                return response([ToolCallPart(name, ARGS[name], tool_call_id=f"r{len(messages)}")])
            if any(isinstance(p, ToolReturnPart) for p in last):
                return response([TextPart(FINAL_TEXT)])
            return response([ToolCallPart(name, args, tool_call_id=f"c{i}")
                             for i, (name, args) in enumerate(CALLS)])

        self.agent = Agent(FunctionModel(model), tools=TOOLS)

    async def arun(self, index: int) -> Any:
        return (await self.agent.run(question(index))).output


# -- smolagents -----------------------------------------------------------------------


def _smol_text(message: Any) -> str:
    content = message.content if hasattr(message, "content") else message.get("content")
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return content or ""


class SmolagentsVariant(Variant):
    framework = "smolagents"
    name = "smolagents ToolCallingAgent"
    imports = "from smolagents import ToolCallingAgent, Model, tool"
    concurrency = "threads"  # no async API: W3 runs one thread (and one agent) per run
    description = ("ToolCallingAgent: 3 tool calls, then a final_answer tool call; W2: the "
                   "error goes back to the model, which calls the tool again")

    def setup(self, latency: float) -> None:
        from smolagents import Model, ToolCallingAgent, tool
        from smolagents.models import (
            ChatMessage,
            ChatMessageToolCall,
            ChatMessageToolCallFunction,
            MessageRole,
        )
        from smolagents.monitoring import LogLevel, TokenUsage

        self.latency = latency

        def call(name: str, args: dict[str, Any], ident: str) -> Any:
            return ChatMessageToolCall(ChatMessageToolCallFunction(name=name, arguments=args),
                                       id=ident, type="function")

        class FakeModel(Model):
            def generate(self, messages: list[Any], stop_sequences: Any = None,
                         response_format: Any = None, tools_to_call_from: Any = None,
                         **kwargs: Any) -> Any:
                STATE.model_calls += 1
                if latency:
                    time.sleep(latency)
                last = messages[-1]
                if ERROR_TEXT in _smol_text(last):
                    calls = [call("get_weather", ARGS["get_weather"], f"r{len(messages)}")]
                elif last.role == MessageRole.TOOL_RESPONSE:
                    calls = [call("final_answer", {"answer": FINAL_TEXT}, "final")]
                else:
                    calls = [call(n, a, f"c{i}") for i, (n, a) in enumerate(CALLS)]
                return ChatMessage(role=MessageRole.ASSISTANT, content="", tool_calls=calls,
                                   token_usage=TokenUsage(input_tokens=1200, output_tokens=60))

        tools = [tool(f) for f in TOOLS]

        def new_agent() -> Any:
            # verbosity off: the default INFO level renders every step to the console
            return ToolCallingAgent(tools=tools, model=FakeModel(), verbosity_level=LogLevel.OFF)

        self._new_agent = new_agent
        self.agent = new_agent()

    def new_agent(self) -> Any:
        return self._new_agent()

    def run_sync(self, index: int, agent: Any = None) -> Any:
        return (agent or self.agent).run(question(index))

    async def arun(self, index: int) -> Any:  # the sync call, on the loop's thread
        return self.run_sync(index)

    def build_only(self) -> None:
        self._new_agent()


# -- LangGraph ------------------------------------------------------------------------


class LangGraphVariant(Variant):
    framework = "langgraph"
    name = "langgraph react"
    imports = ("from langgraph.prebuilt import create_react_agent, ToolNode; "
               "from langchain_core.language_models.chat_models import BaseChatModel; "
               "from langchain_core.messages import AIMessage")
    description = ("create_react_agent(BaseChatModel fake, ToolNode(handle_tool_errors=True)): "
                   "AIMessage with 3 tool_calls, then a final AIMessage")

    def setup(self, latency: float) -> None:
        warnings.filterwarnings("ignore")  # create_react_agent is deprecated for langchain's
        from langchain_core.language_models.chat_models import BaseChatModel
        from langchain_core.messages import AIMessage, ToolMessage
        from langchain_core.outputs import ChatGeneration, ChatResult
        from langgraph.prebuilt import ToolNode, create_react_agent

        self.latency = latency

        def reply(messages: list[Any]) -> Any:
            STATE.model_calls += 1
            usage = {"input_tokens": 1200, "output_tokens": 60, "total_tokens": 1260}
            results = []
            for message in reversed(messages):
                if not isinstance(message, ToolMessage):
                    break
                results.append(message)
            failed = [m for m in results if m.status == "error"]
            if failed:
                name = str(failed[0].name)
                calls = [{"name": name, "args": ARGS[name], "id": f"r{len(messages)}",
                          "type": "tool_call"}]
                return AIMessage(content="", tool_calls=calls, usage_metadata=usage)
            if results:
                return AIMessage(content=FINAL_TEXT, usage_metadata=usage)
            calls = [{"name": n, "args": a, "id": f"c{i}", "type": "tool_call"}
                     for i, (n, a) in enumerate(CALLS)]
            return AIMessage(content="", tool_calls=calls, usage_metadata=usage)

        class FakeChatModel(BaseChatModel):
            @property
            def _llm_type(self) -> str:
                return "fake"

            def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
                return self

            def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None,
                          **kwargs: Any) -> Any:
                if latency:
                    time.sleep(latency)
                return ChatResult(generations=[ChatGeneration(message=reply(messages))])

            async def _agenerate(self, messages: Any, stop: Any = None, run_manager: Any = None,
                                 **kwargs: Any) -> Any:
                await _latency(latency)
                return ChatResult(generations=[ChatGeneration(message=reply(messages))])

        # handle_tool_errors=True: the default re-raises a tool's own exceptions (W2)
        self.agent = create_react_agent(FakeChatModel(),
                                        ToolNode(TOOLS, handle_tool_errors=True))

    async def arun(self, index: int) -> Any:
        state = await self.agent.ainvoke({"messages": [("user", question(index))]})
        return state["messages"][-1].content


# -- OpenAI Agents SDK ----------------------------------------------------------------


class OpenAIAgentsVariant(Variant):
    framework = "openai_agents"
    name = "openai_agents"
    imports = ("from agents import Agent, Runner, function_tool; "
               "from agents.models.interface import Model")
    description = "Agent + Runner.run with a custom Model: 3 function calls, then a message"

    def setup(self, latency: float) -> None:
        from agents import Agent, Runner, Usage, function_tool, set_tracing_disabled
        from agents.items import ModelResponse
        from agents.models.interface import Model
        from openai.types.responses import (
            ResponseFunctionToolCall,
            ResponseOutputMessage,
            ResponseOutputText,
        )

        set_tracing_disabled(True)  # its default exporter sends traces to OpenAI's API
        self.latency = latency
        self.runner = Runner

        def fcall(name: str, args: dict[str, Any], ident: str) -> Any:
            return ResponseFunctionToolCall(id=f"fc_{ident}", call_id=ident, type="function_call",
                                            name=name, arguments=json.dumps(args))

        class FakeModel(Model):
            async def get_response(self, system_instructions: Any, input: Any,
                                   model_settings: Any, tools: Any, output_schema: Any,
                                   handoffs: Any, tracing: Any, **kwargs: Any) -> Any:
                STATE.model_calls += 1
                await _latency(latency)
                items = input if isinstance(input, list) else []
                outputs = []
                for item in reversed(items):
                    if not (isinstance(item, dict) and item.get("type") == "function_call_output"):
                        break
                    outputs.append(item)
                if any(ERROR_TEXT in str(item.get("output")) for item in outputs):
                    out: list[Any] = [fcall("get_weather", ARGS["get_weather"], f"r{len(items)}")]
                elif outputs:
                    out = [ResponseOutputMessage(
                        id="msg_final", type="message", role="assistant", status="completed",
                        content=[ResponseOutputText(type="output_text", text=FINAL_TEXT,
                                                    annotations=[])])]
                else:
                    out = [fcall(n, a, f"c{i}") for i, (n, a) in enumerate(CALLS)]
                return ModelResponse(output=out, response_id=None,
                                     usage=Usage(requests=1, input_tokens=1200,
                                                 output_tokens=60, total_tokens=1260))

            def stream_response(self, *args: Any, **kwargs: Any) -> Any:
                raise NotImplementedError

        self.agent = Agent(name="assistant", instructions="Answer with the tools.",
                           model=FakeModel(), tools=[function_tool(f) for f in TOOLS])

    async def arun(self, index: int) -> Any:
        return (await self.runner.run(self.agent, question(index))).final_output


VARIANTS: dict[str, Callable[[], Variant]] = {
    "dcbrain:process": lambda: DCBrainVariant("process"),
    "dcbrain:inprocess": lambda: DCBrainVariant("inprocess"),
    "pydantic_ai": PydanticAIVariant,
    "smolagents": SmolagentsVariant,
    "langgraph": LangGraphVariant,
    "openai_agents": OpenAIAgentsVariant,
}
#: the module each framework is imported as (a framework not installed is skipped)
MODULES = {"dcbrain": "dcbrain", "pydantic_ai": "pydantic_ai", "smolagents": "smolagents",
           "langgraph": "langgraph", "openai_agents": "agents"}
#: the distribution whose version each row's numbers are for
DISTRIBUTIONS = {"dcbrain": "dcbrain", "pydantic_ai": "pydantic-ai-slim",
                 "smolagents": "smolagents", "langgraph": "langgraph",
                 "openai_agents": "openai-agents"}
#: other packages whose versions matter to the numbers
OTHER_DISTRIBUTIONS = ["pydantic", "pydantic-core", "langchain-core", "langgraph-prebuilt",
                       "openai", "transitions", "tiktoken", "jinja2"]
