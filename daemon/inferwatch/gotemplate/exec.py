"""Run a parsed template: Go text/template's execution rules, interpreted over the tree.

Nothing is evaluated as Python: the tree only names fields, variables and functions from
:mod:`template_table`. Work is bounded: output size, ``range`` iterations, ``template`` depth
and ``query`` calls each have a cap, and going over one is an execution error, as any Go
execution error is (``template: NAME:LINE:COL: executing "NAME" at <NODE>: MESSAGE``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from inferwatch.golang.strings import go_quote
from inferwatch.gotemplate import ast
from inferwatch.gotemplate.eval import MISSING, Evaluator, ExecError, Limits
from inferwatch.gotemplate.table import Env
from inferwatch.gotemplate.values import QueryResult, TemplateData, print_value, truth

__all__ = ["MISSING", "ExecError", "Executor", "Limits", "execute"]


class _Break(Exception):
    pass


class _Continue(Exception):
    pass


class Executor(Evaluator):
    """Walks the statements of a template, writing its output."""

    def __init__(
        self,
        text: str,
        name: str,
        defines: Mapping[str, tuple[ast.Node, ...]],
        env: Env,
        limits: Limits,
    ) -> None:
        super().__init__(text, name, defines, env, limits)
        self.out: list[str] = []
        self.size = 0
        self.iterations = 0

    def write(self, text: str) -> None:
        self.size += len(text)
        if self.size > self.limits.output_bytes:
            raise self.error(f"template output exceeds {self.limits.output_bytes} bytes")
        self.out.append(text)

    def walk(self, dot: Any, nodes: tuple[ast.Node, ...]) -> None:
        for node in nodes:
            if isinstance(node, ast.Text):
                self.write(node.text)
            elif isinstance(node, ast.Action):
                value = self.pipeline(dot, node.pipe)
                if not node.pipe.decl:
                    self.at(node)
                    self.write(print_value(value))
            elif isinstance(node, ast.Branch):
                if node.kind == "range":
                    self.walk_range(dot, node)
                else:
                    self.walk_if(dot, node)
            elif isinstance(node, ast.TemplateCall):
                self.walk_template(dot, node)
            else:
                raise _Break if node.kind == "break" else _Continue

    def walk_if(self, dot: Any, node: ast.Branch) -> None:
        mark = len(self.vars)
        value = self.pipeline(dot, node.pipe)
        if truth(value):
            self.walk(value if node.kind == "with" else dot, node.body)
        elif node.else_body is not None:
            self.walk(dot, node.else_body)
        del self.vars[mark:]

    def walk_range(self, dot: Any, node: ast.Branch) -> None:
        self.at(node)
        outer = len(self.vars)
        value = self.pipeline(dot, node.pipe)
        if isinstance(value, QueryResult):
            items: list[tuple[Any, Any]] = list(enumerate(value))
        elif isinstance(value, Mapping) and not isinstance(value, TemplateData):
            items = [(k, value[k]) for k in sorted(value)]
        elif value is None:
            items = []
        else:
            raise self.error(f"range can't iterate over {print_value(value)}")
        mark = len(self.vars)
        decl = node.pipe.decl
        try:
            for key, elem in items:
                self.iterations += 1
                if self.iterations > self.limits.range_iterations:
                    raise self.error(f"range exceeds {self.limits.range_iterations} iterations")
                if decl:
                    self.bind(node.pipe, key, elem, mark)
                try:
                    self.walk(elem, node.body)
                except _Continue:
                    pass
                finally:
                    del self.vars[mark:]
        except _Break:
            pass
        if not items and node.else_body is not None:
            self.walk(dot, node.else_body)
        del self.vars[outer:]

    def bind(self, pipe: ast.Pipe, key: Any, elem: Any, mark: int) -> None:
        """Set a range's variables for one iteration: the last one gets the element."""
        decl = pipe.decl
        if pipe.is_assign:
            self.set_var(decl[-1], elem)
            if len(decl) > 1:
                self.set_var(decl[0], key)
            return
        self.vars[mark - 1] = (decl[-1], elem)
        if len(decl) > 1:
            self.vars[mark - 2] = (decl[0], key)

    def walk_template(self, dot: Any, node: ast.TemplateCall) -> None:
        self.at(node)
        body = self.defines.get(node.name)
        if body is None:
            raise self.error(f"template {go_quote(node.name)} not defined")
        if self.depth >= self.limits.depth:
            raise self.error(f"exceeded maximum template depth ({self.limits.depth})")
        new_dot = self.pipeline(dot, node.pipe) if node.pipe is not None else None
        saved_vars, saved_name = self.vars, self.name
        self.vars, self.depth = [("$", new_dot)], self.depth + 1
        self.name = node.name
        try:
            self.walk(new_dot, body)
        finally:
            self.vars, self.name, self.depth = saved_vars, saved_name, self.depth - 1

    # -- expressions --------------------------------------------------------------------------


def execute(
    text: str,
    name: str,
    root: tuple[ast.Node, ...],
    defines: Mapping[str, tuple[ast.Node, ...]],
    data: TemplateData,
    env: Env,
    limits: Limits,
) -> str:
    """Expand the template; raises :class:`ExecError`."""
    run = Executor(text, name, defines, env, limits)
    run.vars.append(("$", data))
    try:
        run.walk(data, root)
    except (_Break, _Continue):
        raise run.error("break or continue outside range") from None
    return "".join(run.out)
