"""The expression half of template execution: pipelines, commands, fields and calls.

Go evaluates a pipeline command by command, passing each result as the last argument of the
next; arguments are converted to each function's parameter type with Go's checks and Go's
messages (``expected string; found 1``, ``wrong type for value; expected …; got …``), and a
function's own failure reads ``error calling NAME: …``. Every error names the node being
evaluated, as Go's does, which is why the evaluator tracks ``node``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple, cast

from inferwatch.golang.strings import go_quote
from inferwatch.gotemplate import ast
from inferwatch.gotemplate.builtins import FuncError
from inferwatch.gotemplate.table import FUNCTIONS, Env, Func, Param
from inferwatch.gotemplate.values import (
    DATA_TYPE_NAME,
    QueryResult,
    QuerySample,
    SafeHTML,
    TemplateData,
    truth,
    type_name,
)

MISSING: Any = object()
_STRUCT_FIELDS = {"Labels": "labels", "ExternalLabels": "external_labels"}
_STRUCT_FIELDS |= {"ExternalURL": "external_url", "Value": "value"}


class Limits(NamedTuple):
    output_bytes: int = 64 * 1024
    range_iterations: int = 10_000
    depth: int = 100
    queries: int = 100


class ExecError(Exception):
    """An execution error, already in Go's words."""


class AlertList(QueryResult):
    """Alertmanager's ``template.Alerts`` in a notification template's dot: a slice of alert
    mappings (``range``, ``len``, ``index`` and ``if`` treat it as the engine's slice type) with
    the two methods Alertmanager users call, ``.Firing`` and ``.Resolved``. Rule templates never
    see one, so their behaviour is unchanged."""

    __slots__ = ()

    def __new__(cls, alerts: Iterable[Mapping[str, Any]] = ()) -> AlertList:
        return super().__new__(cls, cast(Iterable[QuerySample], alerts))

    def with_status(self, status: str) -> AlertList:
        return AlertList(a for a in cast(tuple[Mapping[str, Any], ...], self)
                         if a.get("Status") == status)  # fmt: skip


_ALERT_METHODS = {"Firing": "firing", "Resolved": "resolved"}


class Evaluator:
    """Expression evaluation over one expansion's variables; :class:`Executor` adds statements."""

    def __init__(
        self,
        text: str,
        name: str,
        defines: Mapping[str, tuple[ast.Node, ...]],
        env: Env,
        limits: Limits,
    ) -> None:
        self.text = text
        self.name = name
        self.defines = defines
        self.env = env
        self.limits = limits
        self.queries = 0
        self.depth = 0
        self.vars: list[tuple[str, Any]] = []
        self.node: object = None

    # -- errors -------------------------------------------------------------------------------
    def error(self, message: str) -> ExecError:
        if self.node is None or not hasattr(self.node, "pos"):
            return ExecError(f"template: {self.name}: {message}")
        pos = self.node.pos
        before = self.text[:pos]
        newline = before.rfind("\n")
        line = before.count("\n") + 1
        col = len(before[newline + 1 :].encode())
        where = f"{self.name}:{line}:{col}"
        return ExecError(
            f"template: {where}: executing {go_quote(self.name)} at <{self.node}>: {message}"
        )

    def at(self, node: object) -> None:
        self.node = node

    # -- output and variables -----------------------------------------------------------------
    def var(self, name: str) -> Any:
        for k in range(len(self.vars) - 1, -1, -1):
            if self.vars[k][0] == name:
                return self.vars[k][1]
        raise self.error(f"undefined variable: {name}")

    def set_var(self, name: str, value: Any) -> None:
        for k in range(len(self.vars) - 1, -1, -1):
            if self.vars[k][0] == name:
                self.vars[k] = (name, value)
                return
        raise self.error(f"undefined variable: {name}")

    # -- statements ---------------------------------------------------------------------------
    def pipeline(self, dot: Any, pipe: ast.Pipe) -> Any:
        value: Any = MISSING
        for cmd in pipe.cmds:
            value = self.command(dot, cmd, value)
        for name in pipe.decl:
            if pipe.is_assign:
                self.set_var(name, value)
            else:
                self.vars.append((name, value))
        return value

    def command(self, dot: Any, cmd: ast.Command, final: Any) -> Any:
        first = cmd.args[0]
        if isinstance(first, ast.Field):
            self.at(first)
            return self.fields(dot, first, first.names, cmd.args, final)
        if isinstance(first, ast.Chain):
            return self.chain(dot, first, cmd.args, final)
        if isinstance(first, ast.Identifier):
            return self.function(dot, first, cmd, cmd.args, final)
        if isinstance(first, ast.Pipe):
            self.not_a_function(cmd.args, final)
            return self.pipeline(dot, first)
        if isinstance(first, ast.Variable):
            return self.variable(dot, first, cmd.args, final)
        self.at(first)
        self.not_a_function(cmd.args, final)
        if isinstance(first, ast.Nil):
            raise self.error("nil is not a command")
        if isinstance(first, ast.Dot):
            return dot
        return first.value

    def not_a_function(self, args: tuple[ast.Arg, ...], final: Any) -> None:
        if len(args) > 1 or final is not MISSING:
            raise self.error(f"can't give argument to non-function {args[0]}")

    def variable(self, dot: Any, node: ast.Variable, args: tuple[ast.Arg, ...], final: Any) -> Any:
        self.at(node)
        value = self.var(node.name)
        if not node.names:
            self.not_a_function(args, final)
            return value
        return self.fields(value, node, node.names, args, final)

    def chain(self, dot: Any, node: ast.Chain, args: tuple[ast.Arg, ...], final: Any) -> Any:
        self.at(node)
        receiver = self.arg(dot, Param.ANY, node.node)
        return self.fields(receiver, node, node.names, args, final)

    def fields(
        self,
        receiver: Any,
        node: object,
        names: tuple[str, ...],
        args: tuple[ast.Arg, ...],
        final: Any,
    ) -> Any:
        for name in names[:-1]:
            receiver = self.field(receiver, name, node, False)
        has_args = len(args) > 1 or final is not MISSING
        return self.field(receiver, names[-1], node, has_args)

    def field(self, receiver: Any, name: str, node: object, has_args: bool) -> Any:
        self.at(node)
        if receiver is None:
            return None
        if isinstance(receiver, TemplateData) and name in _STRUCT_FIELDS:
            if has_args:
                raise self.error(f"{name} has arguments but cannot be invoked as function")
            return getattr(receiver, _STRUCT_FIELDS[name])
        if isinstance(receiver, QuerySample) and name in ("Labels", "Value"):
            if has_args:
                raise self.error(f"{name} has arguments but cannot be invoked as function")
            return receiver.labels if name == "Labels" else receiver.value
        if isinstance(receiver, Mapping) and not isinstance(receiver, TemplateData):
            if has_args:
                raise self.error(f"{name} is not a method but has arguments")
            return receiver.get(name, "")
        if isinstance(receiver, AlertList) and name in _ALERT_METHODS:
            if has_args:
                raise self.error(f"wrong number of args for {name}: want 0")
            return receiver.with_status(_ALERT_METHODS[name])
        what = DATA_TYPE_NAME if isinstance(receiver, TemplateData) else type_name(receiver)
        raise self.error(f"can't evaluate field {name} in type {what}")

    def function(
        self, dot: Any, ident: ast.Identifier, cmd: object, args: tuple[ast.Arg, ...], final: Any
    ) -> Any:
        self.at(ident)
        func = FUNCTIONS[ident.name]
        passed = args[1:]
        count = len(passed) + (final is not MISSING)
        fixed = len(func.params)
        if func.variadic is not None and count < fixed:
            raise self.error(
                f"wrong number of args for {ident.name}: want at least {fixed} got {count}"
            )
        if func.variadic is None and count != fixed:
            raise self.error(f"wrong number of args for {ident.name}: want {fixed} got {count}")
        if ident.name in ("and", "or"):
            return self.and_or(dot, ident.name == "or", passed, final)
        values = [self.arg(dot, _param(func, k), node) for k, node in enumerate(passed)]
        if final is not MISSING:
            values.append(self.validate(final, _param(func, len(passed))))
        return self.call(ident.name, func, values, cmd)

    def and_or(self, dot: Any, is_or: bool, passed: tuple[ast.Arg, ...], final: Any) -> Any:
        value: Any = None
        for node in passed:
            value = self.arg(dot, Param.ANY, node)
            if truth(value) == is_or:
                return value
        return final if final is not MISSING else value

    def call(self, name: str, func: Func, values: list[Any], cmd: object) -> Any:
        if name == "query":
            self.queries += 1
            if self.queries > self.limits.queries:
                self.at(cmd)
                raise self.error(f"more than {self.limits.queries} queries in one expansion")
        try:
            return func.impl(self.env, *values) if func.env else func.impl(*values)
        except FuncError as exc:
            self.at(cmd)
            raise self.error(f"error calling {name}: {exc}") from None
        except (AttributeError, TypeError):
            self.at(cmd)
            message = "runtime error: invalid memory address or nil pointer dereference"
            raise self.error(f"error calling {name}: {message}") from None

    def arg(self, dot: Any, param: Param, node: ast.Arg) -> Any:
        self.at(node)
        if isinstance(node, ast.Dot):
            return self.validate(dot, param)
        if isinstance(node, ast.Nil):
            if param is Param.STRING:
                raise self.error("cannot assign nil to string")
            return QueryResult() if param is Param.RESULT else None
        if isinstance(node, ast.Field):
            return self.validate(self.fields(dot, node, node.names, (node,), MISSING), param)
        if isinstance(node, ast.Variable):
            return self.validate(self.variable(dot, node, (node,), MISSING), param)
        if isinstance(node, ast.Pipe):
            return self.validate(self.pipeline(dot, node), param)
        if isinstance(node, ast.Identifier):
            return self.validate(self.function(dot, node, node, (node,), MISSING), param)
        if isinstance(node, ast.Chain):
            return self.validate(self.chain(dot, node, (node,), MISSING), param)
        if param is Param.ANY:
            return node.value
        if param is Param.STRING:
            if isinstance(node, ast.String):
                return node.value
            raise self.error(f"expected string; found {node}")
        raise self.error(f"can't handle {node} for arg of type {param.value}")

    def validate(self, value: Any, param: Param) -> Any:
        if param is Param.ANY:
            return value
        if value is None:
            if param is Param.STRING:
                raise self.error("invalid value; expected string")
            return QueryResult() if param is Param.RESULT else None
        ok = {
            Param.STRING: isinstance(value, str) and not isinstance(value, SafeHTML),
            Param.SAMPLE: isinstance(value, QuerySample),
            Param.RESULT: isinstance(value, QueryResult),
        }[param]
        if not ok:
            raise self.error(
                f"wrong type for value; expected {param.value}; got {type_name(value)}"
            )
        return value


def _param(func: Func, k: int) -> Param:
    if k < len(func.params):
        return func.params[k]
    assert func.variadic is not None
    return func.variadic
