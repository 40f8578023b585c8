"""A toolbox's tools as plain typed Python functions, for frameworks that build their
tools from a function (its name, signature, type hints and docstring): smolagents'
``tool``, DSPy's ``dspy.Tool`` and the like.

Each function is written as source and compiled, so ``inspect.getsource`` finds it
(smolagents reads the source of a tool function): the source is kept in ``linecache``
under ``<recallstore tool NAME DIGEST>``. Parameters come from the tool's input schema: the
required ones first, every optional one as ``T | None = None`` (``None`` means the
tool's default, as in OpenAI strict mode); a shape with no plain Python type is
``Any``. The docstring is the tool's description and a Google-style ``Args:`` section.
"""

from __future__ import annotations

import hashlib
import keyword
import linecache
from collections.abc import Callable, Mapping
from typing import Any, Literal

from recallstore.tools import Tool

__all__ = ["tool_function"]

_PLAIN = {"string": "str", "integer": "int", "number": "float", "boolean": "bool"}


def _annotation(schema: Mapping[str, Any]) -> str:
    """A Python type expression for a JSON schema, ``Any`` when there is none."""
    options = schema.get("anyOf")
    if isinstance(options, list):
        kinds = [_annotation(option) for option in options if option.get("type") != "null"]
        nullable = len(kinds) < len(options)
        if len(kinds) == 1 and kinds[0] != "Any":
            return f"{kinds[0]} | None" if nullable else kinds[0]
        return "Any"
    enum = schema.get("enum")
    if isinstance(enum, list) and enum and all(isinstance(value, str) for value in enum):
        return f"Literal[{', '.join(repr(value) for value in enum)}]"
    kind = schema.get("type")
    if kind in _PLAIN:
        return _PLAIN[kind]
    if kind == "array":
        items = schema.get("items")
        return f"list[{_annotation(items)}]" if isinstance(items, Mapping) else "list[Any]"
    if kind == "object":
        return "dict[str, Any]"
    return "Any"


def _usable(name: object) -> bool:
    return isinstance(name, str) and name.isidentifier() and not keyword.iskeyword(name)


def tool_function(
    tool: Tool[Any, Any], call: Callable[[str, dict[str, Any]], dict[str, Any]]
) -> Callable[..., dict[str, Any]]:
    """``tool`` as a function of its arguments that returns ``call(tool.name, arguments)``.

    A tool whose name or argument names are no Python identifiers raises
    :class:`ValueError` naming it.
    """
    schema = tool.input_schema()
    properties: Mapping[str, Any] = schema.get("properties", {})
    required = [name for name in properties if name in schema.get("required", ())]
    optional = [name for name in properties if name not in required]
    for name in (tool.name, *properties):
        if not _usable(name) or name.startswith("_"):
            raise ValueError(
                f"tool {tool.name!r}: {name!r} cannot be a Python function or parameter name"
            )
    parameters = [f"{name}: {_annotation(properties[name])}" for name in required]
    for name in optional:
        annotation = _annotation(properties[name])
        if not annotation.endswith(" | None") and annotation != "Any":
            annotation += " | None"
        parameters.append(f"{name}: {annotation} = None")
    passed = ", ".join(f"{name!r}: {name}" for name in properties)
    source = (
        f"def {tool.name}({', '.join(parameters)}) -> dict[str, Any]:\n"
        f"    return _call({tool.name!r}, {{{passed}}})\n"
    )
    # Named by what it says: two tools of one name with other arguments keep their own.
    digest = hashlib.sha256(source.encode()).hexdigest()[:12]
    filename = f"<recallstore tool {tool.name} {digest}>"
    namespace: dict[str, Any] = {"Any": Any, "Literal": Literal, "_call": call}
    exec(compile(source, filename, "exec", dont_inherit=True), namespace)
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    function: Callable[..., dict[str, Any]] = namespace[tool.name]
    function.__doc__ = _docstring(tool.description, properties)
    function.__module__ = "recallstore.sync"
    return function


def _docstring(description: str, properties: Mapping[str, Any]) -> str:
    lines = [description.strip(), "", "Args:"]
    for name, schema in properties.items():
        about = " ".join(str(schema.get("description") or name).split())
        lines.append(f"    {name}: {about}")
    return "\n".join(lines) if properties else description.strip()
