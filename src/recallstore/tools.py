"""A framework-neutral tool model and its exports to OpenAI, Anthropic and MCP.

A :class:`Tool` is defined once from typed parts — a name, a description, a pydantic
argument model, a pydantic result model and an async function — and exported to each
framework's wire format from that single definition. A :class:`ToolSpec` is the same
definition before it is bound to a context (for the memory tools, one scope's memory):
its schemas can be read and exported when an agent is declared, and
:meth:`ToolSpec.bind` turns it into a runnable :class:`Tool` once the context exists.

Three audiences of failure, kept apart on purpose:

* the *model's* mistakes (unknown or wrong-typed arguments, an id it may not touch)
  come back as a structured result ``{"ok": false, "error": {...}}`` it can read and
  act on — never an exception;
* the *developer's* mistakes (a tool function returning the wrong shape) raise;
* the *store's* failures (:class:`~recallstore.errors.StoreUnavailableError`)
  propagate to the host, which must know its memory is down.
"""

from __future__ import annotations

import copy
import functools
import re
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Generic, Literal, TypeAlias, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError, model_validator

from recallstore._json import UntrustedJsonError, parse_untrusted_json
from recallstore.errors import ConfigurationError

__all__ = [
    "Tool",
    "ToolArguments",
    "ToolDefinition",
    "ToolError",
    "ToolErrorCode",
    "ToolFailure",
    "ToolResult",
    "ToolSpec",
    "anthropic_tool",
    "error_result",
    "mcp_tool",
    "openai_tool",
    "strict_json_schema",
]

ToolErrorCode = Literal[
    "invalid_arguments", "not_found", "conflict", "unknown_tool", "memory_unavailable"
]

ArgsT = TypeVar("ArgsT", bound="ToolArguments")
ResultT = TypeVar("ResultT", bound="ToolResult")
ContextT = TypeVar("ContextT")

# The tool names OpenAI and Anthropic both accept (MCP accepts more).
_TOOL_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")


class ToolArguments(BaseModel):
    """Base of every tool's argument model: unknown arguments are refused.

    An explicit ``null`` for an argument whose default is not ``None`` means "use the
    default", because OpenAI strict mode makes every argument required and expresses
    "optional" as nullable.
    """

    model_config: ClassVar[ConfigDict] = ConfigDict(extra="forbid", frozen=True)

    @model_validator(mode="before")
    @classmethod
    def _null_means_default(cls, data: Any) -> Any:
        if not isinstance(data, Mapping):
            return data
        return {
            key: value
            for key, value in data.items()
            if not (
                value is None
                and key in cls.model_fields
                and not cls.model_fields[key].is_required()
                and cls.model_fields[key].get_default(call_default_factory=True) is not None
            )
        }


class ToolResult(BaseModel):
    """Base of every tool's success result: ``ok`` is always true."""

    model_config: ClassVar[ConfigDict] = ConfigDict(extra="forbid", frozen=True)

    ok: Literal[True] = True


class ToolError(BaseModel):
    """What went wrong, in words a model can act on; ``fields`` names the arguments at fault."""

    model_config: ClassVar[ConfigDict] = ConfigDict(extra="forbid", frozen=True)

    code: ToolErrorCode
    message: str
    fields: tuple[str, ...] = ()


class ToolFailure(Exception):
    """Raised inside a tool function to answer the model with a structured error."""

    def __init__(self, code: ToolErrorCode, message: str, fields: Iterable[str] = ()) -> None:
        self.error = ToolError(code=code, message=message, fields=tuple(fields))
        super().__init__(f"{code}: {message}")


def error_result(code: ToolErrorCode, message: str, fields: Iterable[str] = ()) -> dict[str, Any]:
    """The JSON-ready ``{"ok": false, "error": {...}}`` result a model receives."""
    error = ToolError(code=code, message=message, fields=tuple(fields))
    return {"ok": False, "error": error.model_dump(mode="json")}


def _describe_validation_error(exc: ValidationError, allowed: Iterable[str]) -> dict[str, Any]:
    problems: list[str] = []
    fields: list[str] = []
    for error in exc.errors(include_url=False):
        field = ".".join(str(part) for part in error["loc"]) or "arguments"
        fields.append(field)
        if error["type"] == "extra_forbidden":
            problems.append(
                f"{field}: unknown argument (this tool takes only: {', '.join(allowed)})"
            )
        else:
            problems.append(f"{field}: {error['msg'].removeprefix('Value error, ')}")
    return error_result("invalid_arguments", "; ".join(problems), dict.fromkeys(fields))


@dataclass(frozen=True, slots=True)
class Tool(Generic[ArgsT, ResultT]):
    """One tool: typed arguments in, a typed result out, defined once for every framework.

    ``read_only``, ``destructive`` and ``idempotent`` become MCP tool annotations.
    """

    name: str
    description: str
    arguments: type[ArgsT]
    result: type[ResultT]
    function: Callable[[ArgsT], Awaitable[ResultT]]
    title: str | None = None
    read_only: bool = False
    destructive: bool = False
    idempotent: bool = False

    async def invoke(self, arguments: Mapping[str, Any] | str | None) -> dict[str, Any]:
        """Validate ``arguments``, run the tool and return its JSON-ready result.

        ``arguments`` may be a mapping or the JSON text some APIs deliver. Bad arguments
        and :class:`ToolFailure` become a structured error result; anything else raises.
        """
        if arguments is None:
            arguments = {}
        if isinstance(arguments, str):
            try:
                arguments = parse_untrusted_json(arguments) if arguments.strip() else {}
            except UntrustedJsonError as exc:
                return error_result("invalid_arguments", f"arguments are not valid JSON: {exc}")
        if not isinstance(arguments, Mapping):
            return error_result(
                "invalid_arguments",
                f"arguments must be a JSON object, got {type(arguments).__name__}",
            )
        try:
            parsed = self.arguments.model_validate(dict(arguments))
        except ValidationError as exc:
            return _describe_validation_error(exc, self.arguments.model_fields)
        try:
            outcome = await self.function(parsed)
        except ToolFailure as failure:
            return {"ok": False, "error": failure.error.model_dump(mode="json")}
        # A wrong result shape is a bug in the tool, not the model's problem: let it raise.
        return self.result.model_validate(outcome).model_dump(mode="json")

    def input_schema(self) -> dict[str, Any]:
        """The argument model's JSON schema (defaults and length caps included)."""
        return _input_schema(self.arguments)

    def argument_names(self) -> frozenset[str]:
        """The names of the arguments the model may pass: the input schema's properties."""
        return frozenset(_made_input_schema(self.arguments).get("properties", {}))

    def output_schema(self) -> dict[str, Any]:
        """The success result's JSON schema."""
        return _output_schema(self.result)


@dataclass(frozen=True, slots=True)
class ToolSpec(Generic[ContextT, ArgsT, ResultT]):
    """A tool declared once, before any context exists: bind it to one to run it.

    ``run`` receives the context given to :meth:`bind` and the validated arguments.
    ``manual_use`` are the tool's bullets under "When to use it" in the Manual and
    ``manual_rules`` its rules under "How to keep it accurate" (one line each).
    ``read_only``, ``destructive`` and ``idempotent`` become MCP tool annotations.
    A malformed spec raises :class:`~recallstore.errors.ConfigurationError` naming it.
    """

    name: str
    description: str
    arguments: type[ArgsT]
    result: type[ResultT]
    run: Callable[[ContextT, ArgsT], Awaitable[ResultT]]
    title: str | None = None
    read_only: bool = False
    destructive: bool = False
    idempotent: bool = False
    manual_use: tuple[str, ...] = ()
    manual_rules: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not _TOOL_NAME.fullmatch(self.name):
            raise ConfigurationError(
                f"tool name {self.name!r} must be 1 to 64 letters, digits, '_' or '-' "
                "(the names OpenAI and Anthropic both accept)"
            )
        if not isinstance(self.description, str) or not self.description.strip():
            raise ConfigurationError(f"tool {self.name!r} needs a non-empty description")
        for field, base in (("arguments", ToolArguments), ("result", ToolResult)):
            model = getattr(self, field)
            if not (isinstance(model, type) and issubclass(model, base)):
                raise ConfigurationError(
                    f"tool {self.name!r}: {field} must be a subclass of "
                    f"recallstore.tools.{base.__name__}, got {model!r}"
                )
        if not callable(self.run):
            raise ConfigurationError(
                f"tool {self.name!r}: run must be callable (an async function), got {self.run!r}"
            )
        for field in ("manual_use", "manual_rules"):
            lines = getattr(self, field)
            if not isinstance(lines, tuple) or not all(
                isinstance(line, str) and line.strip() and len(line.splitlines()) == 1
                for line in lines
            ):
                raise ConfigurationError(
                    f"tool {self.name!r}: {field} must be a tuple of one-line strings, "
                    f"got {lines!r}"
                )

    def bind(self, context: ContextT) -> Tool[ArgsT, ResultT]:
        """The runnable tool: every call runs ``run(context, arguments)``."""
        return Tool(
            name=self.name,
            description=self.description,
            arguments=self.arguments,
            result=self.result,
            function=functools.partial(self.run, context),
            title=self.title,
            read_only=self.read_only,
            destructive=self.destructive,
            idempotent=self.idempotent,
        )

    def input_schema(self) -> dict[str, Any]:
        """The argument model's JSON schema (defaults and length caps included)."""
        return _input_schema(self.arguments)

    def argument_names(self) -> frozenset[str]:
        """The names of the arguments the model may pass: the input schema's properties."""
        return frozenset(_made_input_schema(self.arguments).get("properties", {}))

    def output_schema(self) -> dict[str, Any]:
        """The success result's JSON schema."""
        return _output_schema(self.result)


ToolDefinition: TypeAlias = Tool[Any, Any] | ToolSpec[Any, Any, Any]
"""Anything the exports accept: a bound :class:`Tool` or an unbound :class:`ToolSpec`."""


def _input_schema(arguments: type[ToolArguments]) -> dict[str, Any]:
    return copy.deepcopy(_made_input_schema(arguments))


def _output_schema(result: type[ToolResult]) -> dict[str, Any]:
    return copy.deepcopy(_made_output_schema(result))


# A toolbox checks its tools' schemas each time it is made (one per conversation) and
# adapters export them: pydantic makes a schema in about 0.3 ms, a copy takes 0.01.
# Callers get copies, so the kept schema is never changed under another.
@functools.lru_cache(maxsize=256)
def _made_input_schema(arguments: type[ToolArguments]) -> dict[str, Any]:
    schema = _clean_schema(arguments.model_json_schema())
    # The model's docstring is for developers; the tool description speaks to the model.
    schema.pop("description", None)
    return schema


@functools.lru_cache(maxsize=256)
def _made_output_schema(result: type[ToolResult]) -> dict[str, Any]:
    return _clean_schema(result.model_json_schema(mode="serialization"))


def _clean_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """Drop pydantic's generated ``title`` keys; names and descriptions carry the meaning."""

    def walk(node: Any, *, in_properties: bool = False) -> Any:
        if isinstance(node, dict):
            return {
                key: walk(value, in_properties=key in ("properties", "$defs"))
                for key, value in node.items()
                if in_properties or key != "title"
            }
        if isinstance(node, list):
            return [walk(item) for item in node]
        return node

    cleaned: dict[str, Any] = walk(schema)
    return cleaned


# OpenAI structured outputs accept only this subset of JSON Schema in strict mode.
_STRICT_KEYWORDS = frozenset(
    {
        "type",
        "description",
        "properties",
        "required",
        "additionalProperties",
        "items",
        "enum",
        "const",
        "anyOf",
        "$ref",
        "$defs",
        "pattern",
        "format",
        "multipleOf",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "minItems",
        "maxItems",
    }
)


def _is_nullable(schema: Mapping[str, Any]) -> bool:
    kind = schema.get("type")
    if kind == "null" or (isinstance(kind, list) and "null" in kind):
        return True
    return any(_is_nullable(option) for option in schema.get("anyOf", ()))


def strict_json_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """Rewrite a JSON schema into OpenAI's strict-mode subset.

    Every object gets ``additionalProperties: false`` and lists every property as
    required; a property that was optional becomes nullable (``null`` = the default).
    Keywords strict mode rejects (``default``, ``minLength``, ``maxLength``, ...) are
    dropped — the tool still enforces them and its descriptions state the caps.
    """

    def walk(node: Any) -> Any:
        if isinstance(node, list):
            return [walk(item) for item in node]
        if not isinstance(node, dict):
            return node
        out: dict[str, Any] = {}
        for key, value in node.items():
            if key not in _STRICT_KEYWORDS:
                continue
            if key in ("properties", "$defs"):
                out[key] = {name: walk(sub) for name, sub in value.items()}
            else:
                out[key] = walk(value)
        if out.get("type") == "object" or "properties" in out:
            properties: dict[str, Any] = out.get("properties", {})
            originally_required = set(node.get("required", ()))
            for name, sub in properties.items():
                if name not in originally_required and not _is_nullable(sub):
                    description = sub.pop("description", None)
                    properties[name] = {"anyOf": [sub, {"type": "null"}]}
                    if description is not None:
                        properties[name]["description"] = description
            out["type"] = "object"
            out["properties"] = properties
            out["required"] = list(properties)
            out["additionalProperties"] = False
        return out

    result: dict[str, Any] = walk(copy.deepcopy(dict(schema)))
    return result


def openai_tool(
    tool: ToolDefinition, *, api: Literal["chat", "responses"] = "chat"
) -> dict[str, Any]:
    """An OpenAI function tool in strict mode, for Chat Completions or the Responses API."""
    function = {
        "name": tool.name,
        "description": tool.description,
        "parameters": strict_json_schema(tool.input_schema()),
        "strict": True,
    }
    if api == "responses":
        return {"type": "function", **function}
    return {"type": "function", "function": function}


def anthropic_tool(tool: ToolDefinition) -> dict[str, Any]:
    """An Anthropic Messages API tool definition (``input_schema``)."""
    return {"name": tool.name, "description": tool.description, "input_schema": tool.input_schema()}


def mcp_tool(tool: ToolDefinition) -> dict[str, Any]:
    """An MCP tool definition with behaviour annotations and an output schema."""
    return {
        "name": tool.name,
        "title": tool.title or tool.name,
        "description": tool.description,
        "inputSchema": tool.input_schema(),
        "outputSchema": tool.output_schema(),
        "annotations": {
            "title": tool.title or tool.name,
            "readOnlyHint": tool.read_only,
            "destructiveHint": tool.destructive,
            "idempotentHint": tool.idempotent,
            # Memory lives in a local store, not the open web.
            "openWorldHint": False,
        },
    }
