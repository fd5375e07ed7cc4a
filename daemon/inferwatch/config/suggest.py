""" "Did you mean …?" for an unknown config key: the closest key the model accepts at that place
(:mod:`difflib`), so ``metrics_ulr`` is answered with ``metrics_url``."""

from __future__ import annotations

import difflib
import types
from collections.abc import Sequence
from typing import Annotated, Any, Union, get_args, get_origin

from pydantic import BaseModel

CUTOFF = 0.75


def _models(annotation: Any) -> list[type[BaseModel]]:
    """The models an annotation can hold (through lists, dicts' values, unions, Annotated)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    origin = get_origin(annotation)
    if origin is Annotated:
        return _models(get_args(annotation)[0])
    if origin in (list, tuple, Union, types.UnionType):
        return [m for arg in get_args(annotation) for m in _models(arg)]
    if origin is dict:
        return _models(get_args(annotation)[1])
    return []


def keys_of(model: type[BaseModel]) -> list[str]:
    return [info.alias or name for name, info in model.model_fields.items()]


def known_keys(root: type[BaseModel], parents: Sequence[str | int]) -> list[str]:
    """The keys accepted in the mapping at ``parents`` (a config location without the key)."""
    models = [root]
    for part in parents:
        if isinstance(part, int):
            continue  # a list item: the list's annotation already named the item's model
        found: list[type[BaseModel]] = []
        for model in models:
            for name, info in model.model_fields.items():
                if part in (name, info.alias):
                    found.extend(_models(info.annotation))
        models = found
    return sorted({key for model in models for key in keys_of(model)})


def did_you_mean(key: str, known: Sequence[str]) -> str:
    """``"; did you mean metrics_url?"``, or empty when nothing is close."""
    close = difflib.get_close_matches(key, known, n=1, cutoff=CUTOFF)
    return f"; did you mean {close[0]}?" if close else ""


__all__ = ["did_you_mean", "known_keys"]
