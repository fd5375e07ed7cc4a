"""The rule service's hot reload asks the disk first: a file written beside the rule files (a
log in the same directory) reloads nothing; a rule file that changes does."""

from __future__ import annotations

from pathlib import Path

from inferwatch.clock import FakeClock
from inferwatch.rules.service import RuleService
from inferwatch.store.tsdb import SeriesStore

RULES = "groups:\n  - name: g\n    rules:\n      - alert: A\n        expr: vector(1)\n"


def test_only_a_changed_rule_file_counts_as_a_change(tmp_path: Path) -> None:
    rules = tmp_path / "rules.yaml"
    rules.write_text(RULES)
    clock = FakeClock()
    service = RuleService(
        SeriesStore(clock), clock, [str(tmp_path / "*.yaml")], external_labels={}, state_dir=None
    )
    assert service.load()
    assert not service.changed_on_disk()
    (tmp_path / "daemon.log").write_text("a line\n" * 100)  # the directory changed, no rule did
    assert not service.changed_on_disk()
    rules.write_text(RULES.replace("A", "B"))
    assert service.changed_on_disk()
    assert service.load() and not service.changed_on_disk()
    (tmp_path / "more.yaml").write_text(RULES.replace("A", "C"))  # a new file the glob takes
    assert service.changed_on_disk()
