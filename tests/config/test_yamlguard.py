"""The guarded composer over libyaml's parser gives the same tree as over PyYAML's, and a text
libyaml rejects is reported in PyYAML's words."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from inferwatch.config.yamlguard import FastGuardedLoader, GuardedLoader, compose
from inferwatch.config.yamlpos import load_located

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = sorted([*ROOT.glob("rules/*.yaml"), *ROOT.glob("tests/fixtures/config/*.yml")])

pytestmark = pytest.mark.skipif(FastGuardedLoader is None, reason="PyYAML without libyaml")


def _tree(node: yaml.Node | None) -> object:
    """Everything of a node a caller reads: tag, value, and where it starts and ends."""
    if node is None:
        return None
    where = (node.start_mark.line, node.start_mark.column, node.end_mark.line,
             node.end_mark.column)  # fmt: skip
    if isinstance(node, yaml.MappingNode):
        return (node.tag, where, [(_tree(k), _tree(v)) for k, v in node.value])
    if isinstance(node, yaml.SequenceNode):
        return (node.tag, where, [_tree(v) for v in node.value])
    return (node.tag, where, node.value)


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
def test_both_parsers_compose_the_same_tree(path: Path) -> None:
    text = path.read_text()
    assert FastGuardedLoader is not None
    fast = yaml.compose(text, Loader=FastGuardedLoader)
    pure = yaml.compose(text, Loader=GuardedLoader)
    assert _tree(fast) == _tree(pure)


def test_shipped_files_were_found() -> None:
    assert len(SHIPPED) >= 7


@pytest.mark.parametrize(
    "text",
    [
        "a: 'unterminated\n",
        "a: b: c\n",
        "a: [1, 2\n",
        "a: " + "[" * 2000 + "]" * 2000 + "\n",  # over libyaml's own depth limit
        "a: &x 1\nb: *y\n",
    ],
    ids=["quote", "mapping-value", "flow", "libyaml-depth", "undefined-alias"],
)
def test_a_rejected_text_is_reported_as_pyyaml_reports_it(text: str) -> None:
    with pytest.raises(yaml.YAMLError) as pure:
        yaml.compose(text, Loader=GuardedLoader)
    with pytest.raises(yaml.YAMLError) as ours:
        compose(text)
    assert str(ours.value) == str(pure.value)


def test_located_values_and_marks() -> None:
    found = load_located("a:\n  b: [1, two]\n  c: 'x'\n", "f.yaml")
    assert found.problems == []
    assert found.data == {"a": {"b": [1, "two"], "c": "x"}}
    assert found.marks[("a", "b", 1)] == (2, 10)
    assert found.marks[("a", "c")] == (3, 3)
