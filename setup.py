"""Build hook: ship the top-level rules/ inside the package (as inferwatch/_data/rules).

Everything else about the build is in pyproject.toml. An editable install finds rules/ in the
checkout instead (see inferwatch.resources).
"""

from __future__ import annotations

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py


class BuildWithRules(build_py):
    def run(self) -> None:
        super().run()
        target = Path(self.build_lib) / "inferwatch" / "_data" / "rules"
        target.mkdir(parents=True, exist_ok=True)
        for rule_file in sorted(Path("rules").glob("*.yaml")):
            shutil.copy2(rule_file, target / rule_file.name)


setup(cmdclass={"build_py": BuildWithRules})
