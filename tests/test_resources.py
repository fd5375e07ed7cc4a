"""Shipped files are found installed (inferwatch/_data, written by setup.py's build hook) and in
a source checkout (rules/, deploy/)."""

from __future__ import annotations

import ast
import importlib.util
import shutil
from pathlib import Path
from types import ModuleType

from conftest import REPO
from inferwatch import resources
from inferwatch.install import unit


def setup_py_deploy_files() -> tuple[str, ...]:
    tree = ast.parse((REPO / "setup.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "DEPLOY_FILES":
            value = ast.literal_eval(node.value)
            assert isinstance(value, tuple)
            return value
    raise AssertionError("setup.py has no DEPLOY_FILES")


def installed_copy(tmp_path: Path) -> ModuleType:
    """resources.py in a package laid out as a wheel installs it, with _data as setup.py
    copies it (site-packages/inferwatch/_data/deploy/...)."""
    package = tmp_path / "site-packages" / "inferwatch"
    package.mkdir(parents=True)
    shutil.copy(REPO / "daemon" / "inferwatch" / "resources.py", package / "resources.py")
    for name in setup_py_deploy_files():
        target = package / "_data" / "deploy" / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text("installed " + name)
    spec = importlib.util.spec_from_file_location("installed_resources", package / "resources.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_build_hook_ships_what_install_service_reads() -> None:
    assert set(setup_py_deploy_files()) == {f"systemd/{unit.UNIT_NAME}", "config.example.yaml"}
    for name in setup_py_deploy_files():
        assert (REPO / "deploy" / name).is_file()


def test_a_checkout_reads_deploy(tmp_path: Path) -> None:
    for name in setup_py_deploy_files():
        assert resources.shipped_deploy_file(name) == REPO / "deploy" / name


def test_an_installed_package_reads_its_data(tmp_path: Path) -> None:
    module = installed_copy(tmp_path)
    for name in setup_py_deploy_files():
        path = module.shipped_deploy_file(name)
        assert path.read_text() == "installed " + name
        assert "site-packages" in path.parts
