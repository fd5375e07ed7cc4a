"""Build hook: ship the top-level rules/ inside the package (as inferwatch/_data/rules), and the
files `inferwatch install-service` installs from deploy/ (as inferwatch/_data/deploy).

Everything else about the build is in pyproject.toml. An editable install finds rules/ and
deploy/ in the checkout instead (see inferwatch.resources).
"""

from __future__ import annotations

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py


# deploy/ also holds fleet files (Prometheus, Alertmanager, compose) that stay out of the package
DEPLOY_FILES = ("systemd/inferwatch.service", "config.example.yaml")


class BuildWithRules(build_py):
    def run(self) -> None:
        super().run()
        data = Path(self.build_lib) / "inferwatch" / "_data"
        target = data / "rules"
        target.mkdir(parents=True, exist_ok=True)
        for rule_file in sorted(Path("rules").glob("*.yaml")):
            shutil.copy2(rule_file, target / rule_file.name)
        for name in DEPLOY_FILES:
            (data / "deploy" / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(Path("deploy") / name, data / "deploy" / name)


setup(cmdclass={"build_py": BuildWithRules})
