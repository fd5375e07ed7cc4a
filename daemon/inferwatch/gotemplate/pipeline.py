"""The expression half of the template parser: tokens, pipelines, commands and operands.

A pipeline is an optional declaration (``$x :=``, ``$x =``, or ``$i, $e :=`` in a ``range``)
followed by commands joined with ``|``; a command is operands separated by spaces; an operand
is a term (identifier, ``.``, ``nil``, variable, field, literal or parenthesised pipeline)
possibly followed by ``.Field`` chains. Go's rules hold: identifiers must name a known function
and variables must be declared, both checked here, when the template is parsed. Literals are
decoded as Go does (``strconv.Unquote``; ints unless the text has ``.eEpP``).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from inferwatch.gotemplate import ast
from inferwatch.gotemplate.lex import Kind, TemplateSyntaxError, Token, tokenize

_ESCAPES = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v"}
_ESCAPES |= {"\\": "\\", "'": "'", '"': '"'}
_HEX = {"x": 2, "u": 4, "U": 8}
_OCTAL_INT = re.compile(r"[+-]?0[0-7_]+")
_ARG_KINDS = frozenset(
    {Kind.BOOL, Kind.CHAR, Kind.DOT, Kind.FIELD, Kind.IDENTIFIER, Kind.NUMBER, Kind.NIL}
    | {Kind.RAW_STRING, Kind.STRING, Kind.VARIABLE, Kind.LPAREN}
)


def go_unquote(token: str, pos: int) -> str:
    """Go's ``strconv.Unquote`` for a ``"…"``, `` `…` `` or ``'…'`` literal."""
    if token.startswith("`"):
        return token[1:-1].replace("\r", "")
    body = token[1:-1]
    out: list[str] = []
    i = 0
    while i < len(body):
        c = body[i]
        if c != "\\":
            out.append(c)
            i += 1
            continue
        nxt = body[i + 1 : i + 2]
        if nxt in _ESCAPES and (nxt != "'" or token[0] == "'") and (nxt != '"' or token[0] == '"'):
            out.append(_ESCAPES[nxt])
            i += 2
        elif nxt in _HEX:
            digits = body[i + 2 : i + 2 + _HEX[nxt]]
            if len(digits) != _HEX[nxt] or not all(d in "0123456789abcdefABCDEF" for d in digits):
                raise TemplateSyntaxError("invalid syntax", pos)
            code = int(digits, 16)
            if code > 0x10FFFF or 0xD800 <= code <= 0xDFFF:
                raise TemplateSyntaxError("invalid syntax", pos)
            out.append(chr(code))
            i += 2 + len(digits)
        elif nxt.isdigit() and body[i + 1 : i + 4].isdigit() and len(body[i + 1 : i + 4]) == 3:
            out.append(chr(int(body[i + 1 : i + 4], 8) & 0xFF))
            i += 4
        else:
            raise TemplateSyntaxError("invalid syntax", pos)
    return "".join(out)


def _number(token: Token) -> ast.Number:
    text = token.text
    if token.kind is Kind.CHAR:
        chars = go_unquote(text, token.pos)
        if len(chars) != 1:
            raise TemplateSyntaxError(f"malformed character constant: {text}", token.pos)
        return ast.Number(token.pos, text, ord(chars))
    if text.endswith("i") and not text.lower().startswith(("0x", "-0x", "+0x")):
        raise TemplateSyntaxError(f"complex constant {text} is not supported", token.pos)
    is_hex = text.lstrip("+-").lower().startswith("0x")
    floaty = any(c in text for c in ("p", "P") if is_hex) or (
        not is_hex and any(c in text for c in ".eE")
    )
    try:
        if floaty:
            clean = text.replace("_", "")
            return ast.Number(token.pos, text, float.fromhex(clean) if is_hex else float(clean))
        octal = _OCTAL_INT.fullmatch(text)
        value = int(text.replace("_", ""), 8) if octal else int(text, 0)
    except ValueError:
        raise TemplateSyntaxError(f"illegal number syntax: {text!r}", token.pos) from None
    if not -(2**63) <= value < 2**63:
        raise TemplateSyntaxError(f"{text} overflows int", token.pos)
    return ast.Number(token.pos, text, value)


def _describe(token: Token) -> str:
    """Go's spelling of a token in ``unexpected … in …`` messages."""
    if token.kind is Kind.EOF:
        return "EOF"
    if token.kind is Kind.KEYWORD:
        return f"<{token.text}>"
    if len(token.text) > 10:
        return '"' + token.text[:10] + '"...'
    return '"' + token.text + '"'


class PipelineParser:
    """The token stream and the expression grammar; :class:`Parser` adds the structure."""

    def __init__(
        self,
        text: str,
        check_function: Callable[[str], str | None],
        tokens: list[Token] | None = None,
    ) -> None:
        self.tokens = tokenize(text) if tokens is None else tokens
        self.i = 0
        self.check_function = check_function
        self.vars: list[str] = ["$"]
        self.range_depth = 0

    # -- token stream -------------------------------------------------------------------------
    def peek(self) -> Token:
        return self.tokens[self.i]

    def next(self) -> Token:
        token = self.tokens[self.i]
        if token.kind is not Kind.EOF:
            self.i += 1
        return token

    def next_non_space(self) -> Token:
        token = self.next()
        while token.kind is Kind.SPACE:
            token = self.next()
        return token

    def peek_non_space(self) -> Token:
        token = self.next_non_space()
        self.i -= token.kind is not Kind.EOF
        return token

    def expect(self, kind: Kind, context: str) -> Token:
        token = self.next_non_space()
        if token.kind is not kind:
            raise self.unexpected(token, context)
        return token

    def unexpected(self, token: Token, context: str) -> TemplateSyntaxError:
        return TemplateSyntaxError(f"unexpected {_describe(token)} in {context}", token.pos)

    # -- structure ----------------------------------------------------------------------------
    def pipeline(self, context: str, end: Kind) -> ast.Pipe:
        pos = self.peek_non_space().pos
        decl: list[str] = []
        is_assign = False
        while self.peek_non_space().kind is Kind.VARIABLE:
            start = self.i
            var = self.next_non_space()
            after = self.peek_non_space()
            if after.kind in (Kind.DECLARE, Kind.ASSIGN):
                self.next_non_space()
                is_assign = after.kind is Kind.ASSIGN
                decl.append(var.text)
                self.vars.append(var.text)
                break
            if after.kind is Kind.COMMA:
                self.next_non_space()
                decl.append(var.text)
                self.vars.append(var.text)
                if context == "range" and len(decl) < 2:
                    if self.peek_non_space().kind in (Kind.VARIABLE, Kind.RIGHT, Kind.RPAREN):
                        continue
                    raise TemplateSyntaxError("range can only initialize variables", var.pos)
                raise TemplateSyntaxError(f"too many declarations in {context}", var.pos)
            self.i = start
            break
        cmds: list[ast.Command] = []
        while True:
            token = self.next_non_space()
            if token.kind is end:
                break
            if token.kind not in _ARG_KINDS:
                raise self.unexpected(token, context)
            self.i -= 1
            cmds.append(self.command())
        if not cmds:
            raise TemplateSyntaxError(f"missing value for {context}", token.pos)
        for stage, cmd in enumerate(cmds[1:], start=2):
            if isinstance(cmd.args[0], ast.Bool | ast.Dot | ast.Nil | ast.Number | ast.String):
                raise TemplateSyntaxError(
                    f"non executable command in pipeline stage {stage}", cmd.pos
                )
        return ast.Pipe(pos, tuple(decl), is_assign, tuple(cmds))

    def command(self) -> ast.Command:
        pos = self.peek_non_space().pos
        args: list[ast.Arg] = []
        while True:
            operand = self.operand()
            if operand is not None:
                args.append(operand)
            token = self.next()
            if token.kind is Kind.SPACE:
                continue
            if token.kind in (Kind.RIGHT, Kind.RPAREN):
                self.i -= 1
            elif token.kind is not Kind.PIPE:
                raise self.unexpected(token, "operand")
            break
        if not args:
            raise TemplateSyntaxError("empty command", pos)
        return ast.Command(pos, tuple(args))

    def operand(self) -> ast.Arg | None:
        node = self.term()
        if node is None or self.peek().kind is not Kind.FIELD:
            return node
        pos = self.peek().pos
        names: list[str] = []
        while self.peek().kind is Kind.FIELD:
            names.append(self.next().text[1:])
        if isinstance(node, ast.Field):
            return ast.Field(pos, (*node.names, *names))
        if isinstance(node, ast.Variable):
            return ast.Variable(pos, node.name, (*node.names, *names))
        if isinstance(node, ast.Pipe):
            return ast.Chain(pos, node, tuple(names))
        raise TemplateSyntaxError(f'unexpected . after term "{node}"', pos)

    def term(self) -> ast.Arg | None:
        token = self.next_non_space()
        kind = token.kind
        if kind is Kind.IDENTIFIER:
            problem = self.check_function(token.text)
            if problem is not None:
                raise TemplateSyntaxError(problem, token.pos)
            return ast.Identifier(token.pos, token.text)
        if kind is Kind.DOT:
            return ast.Dot(token.pos)
        if kind is Kind.NIL:
            return ast.Nil(token.pos)
        if kind is Kind.VARIABLE:
            if token.text not in self.vars:
                raise TemplateSyntaxError(f'undefined variable "{token.text}"', token.pos)
            return ast.Variable(token.pos, token.text)
        if kind is Kind.FIELD:
            return ast.Field(token.pos, (token.text[1:],))
        if kind is Kind.BOOL:
            return ast.Bool(token.pos, token.text == "true")
        if kind in (Kind.NUMBER, Kind.CHAR):
            return _number(token)
        if kind is Kind.LPAREN:
            return self.pipeline("parenthesized pipeline", Kind.RPAREN)
        if kind in (Kind.STRING, Kind.RAW_STRING):
            return ast.String(token.pos, token.text, go_unquote(token.text, token.pos))
        self.i -= kind is not Kind.EOF
        return None
