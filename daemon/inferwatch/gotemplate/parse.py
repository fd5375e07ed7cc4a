"""Parse a Go text/template into :mod:`template_ast` nodes, with Go's load-time checks.

What Go refuses when a template is parsed, we refuse too (promtool reports it as a rule-file
error): unknown functions (``function "default" not defined``), undefined variables, unbalanced
``{{end}}``/``{{else}}``, ``{{break}}`` outside ``{{range}}``, bad literals. Variables are scoped
as in Go: a declaration lives to the end of the ``if``/``with``/``range`` that holds it, and a
``define`` body sees only ``$``. ``check_function`` decides what an identifier may name (a name
Go knows but inferwatch does not implement is refused with its own message).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from inferwatch.gotemplate import ast
from inferwatch.gotemplate.lex import Kind, TemplateSyntaxError, Token, tokenize
from inferwatch.gotemplate.pipeline import PipelineParser, go_unquote


class Keyword(NamedTuple):
    """An ``{{end}}`` or ``{{else}}`` met where a node could stand: the word and its offset
    (a plain tuple would not tell it from a node: nodes are named tuples too)."""

    word: str
    pos: int


class Prefix(NamedTuple):
    """A text that starts many templates (the rule prelude ``{{$labels := .Labels}}…``), lexed
    and parsed once: a :class:`Parser` of a text starting with it goes on from where it ends."""

    text: str
    tokens: tuple[Token, ...]  # without the end of input
    nodes: tuple[ast.Node, ...]
    variables: tuple[str, ...]  # those it declares, ``$`` first

    @classmethod
    def of(cls, text: str, check_function: Callable[[str], str | None]) -> Prefix:
        """Raises :class:`TemplateSyntaxError` as a template of ``text`` alone would, and
        ValueError for a text another could not go on from: one not ending with an action
        that trims nothing after it, or one defining templates."""
        parser = Parser(text, check_function)
        nodes = parser.parse()
        tokens = tuple(parser.tokens[:-1])
        ends_action = bool(tokens) and tokens[-1].kind is Kind.RIGHT and text.endswith("}}")
        if not ends_action or text.endswith("-}}"):
            raise ValueError("a prefix ends with an action that trims nothing after it")
        if parser.defines:
            raise ValueError("a prefix defines no template")
        return cls(text, tokens, nodes, tuple(parser.vars))


class Parser(PipelineParser):
    """One template text and its ``define``d sub-templates; with ``prefix``, a text starting
    with it (its nodes come first, its variables are declared)."""

    def __init__(
        self, text: str, check_function: Callable[[str], str | None], prefix: Prefix | None = None
    ) -> None:
        tokens = None
        if prefix is not None:
            if not text.startswith(prefix.text):
                raise ValueError("the text does not start with the prefix")
            tokens = [*prefix.tokens, *tokenize(text, len(prefix.text))]
        super().__init__(text, check_function, tokens)
        self.defines: dict[str, tuple[ast.Node, ...]] = {}
        self.prefix = prefix
        if prefix is not None:
            self.i = len(prefix.tokens)
            self.vars = list(prefix.variables)

    def parse(self) -> tuple[ast.Node, ...]:
        root: list[ast.Node] = [] if self.prefix is None else list(self.prefix.nodes)
        while self.peek().kind is not Kind.EOF:
            start = self.i
            if self.peek().kind is Kind.LEFT:
                self.next()
                word = self.next_non_space()
                if word.kind is Kind.KEYWORD and word.text == "define":
                    self.definition()
                    continue
                self.i = start
            node = self.text_or_action()
            if isinstance(node, Keyword):
                raise TemplateSyntaxError(f"unexpected {{{{{node[0]}}}}}", node[1])
            root.append(node)
        return tuple(root)

    def definition(self) -> None:
        name_token = self.next_non_space()
        if name_token.kind not in (Kind.STRING, Kind.RAW_STRING):
            raise self.unexpected(name_token, "define clause")
        name = go_unquote(name_token.text, name_token.pos)
        self.expect(Kind.RIGHT, "define clause")
        saved, self.vars = self.vars, ["$"]
        body, end = self.item_list()
        self.vars = saved
        if end[0] != "end":
            raise TemplateSyntaxError(f"unexpected {{{{{end[0]}}}}} in define clause", end[1])
        if self.defines.get(name):
            raise TemplateSyntaxError(f"multiple definition of template {name!r}", name_token.pos)
        self.defines[name] = body

    def item_list(self) -> tuple[tuple[ast.Node, ...], Keyword]:
        """Nodes up to an ``{{end}}`` or ``{{else}}``, and which one it was (with its offset)."""
        out: list[ast.Node] = []
        while self.peek_non_space().kind is not Kind.EOF:
            node = self.text_or_action()
            if isinstance(node, Keyword):
                return tuple(out), node
            out.append(node)
        raise TemplateSyntaxError("unexpected EOF", self.peek().pos)

    def text_or_action(self) -> ast.Node | Keyword:
        token = self.next_non_space()
        if token.kind is Kind.TEXT:
            return ast.Text(token.pos, token.text)
        if token.kind is Kind.LEFT:
            return self.action()
        raise self.unexpected(token, "input")

    def action(self) -> ast.Node | Keyword:
        token = self.peek_non_space()
        if token.kind is Kind.KEYWORD:
            self.next_non_space()
            return self.control(token)
        pipe = self.pipeline("command", Kind.RIGHT)
        return ast.Action(pipe.pos, pipe)

    def control(self, token: Token) -> ast.Node | Keyword:
        word = token.text
        if word == "end":
            self.expect(Kind.RIGHT, "end")
            return Keyword("end", token.pos)
        if word == "else":
            after = self.peek_non_space()
            if not (after.kind is Kind.KEYWORD and after.text == "if"):
                self.expect(Kind.RIGHT, "else")
            return Keyword("else", token.pos)
        if word in ("if", "with", "range"):
            return self.branch(word)
        if word in ("break", "continue"):
            if not self.range_depth:
                raise TemplateSyntaxError(f"{{{{{word}}}}} outside {{{{range}}}}", token.pos)
            self.expect(Kind.RIGHT, word)
            return ast.LoopControl(token.pos, word)
        if word in ("template", "block"):
            return self.template_call(word)
        raise self.unexpected(token, "command")

    def branch(self, kind: str) -> ast.Branch:
        mark = len(self.vars)
        pipe = self.pipeline(kind, Kind.RIGHT)
        self.range_depth += kind == "range"
        body, end = self.item_list()
        self.range_depth -= kind == "range"
        else_body: tuple[ast.Node, ...] | None = None
        if end[0] == "else":
            after = self.peek_non_space()
            if kind == "if" and after.kind is Kind.KEYWORD and after.text == "if":
                self.next_non_space()
                else_body = (self.branch("if"),)
            else:
                else_body, end = self.item_list()
                if end[0] != "end":
                    raise TemplateSyntaxError(f"expected end; found {{{{{end[0]}}}}}", end[1])
        del self.vars[mark:]
        return ast.Branch(pipe.pos, kind, pipe, body, else_body)

    def template_call(self, word: str) -> ast.TemplateCall:
        context = f"{word} clause"
        name_token = self.next_non_space()
        if name_token.kind not in (Kind.STRING, Kind.RAW_STRING):
            raise self.unexpected(name_token, context)
        name = go_unquote(name_token.text, name_token.pos)
        pipe = None
        if self.peek_non_space().kind is Kind.RIGHT:
            self.next_non_space()
        else:
            pipe = self.pipeline(context, Kind.RIGHT)
        if word == "block":
            saved, self.vars = self.vars, ["$"]
            depth, self.range_depth = self.range_depth, 0
            body, end = self.item_list()
            self.vars, self.range_depth = saved, depth
            if end[0] != "end":
                raise TemplateSyntaxError(f"unexpected {{{{{end[0]}}}}} in block clause", end[1])
            self.defines[name] = body
        return ast.TemplateCall(name_token.pos, name, pipe)

    # -- pipelines ----------------------------------------------------------------------------
