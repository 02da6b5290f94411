"""Dollars for tokens: one price table (harness/prices.yaml), overridable with HARNESS_PRICES=path.

A provider counts tokens into `Usage` (input_tokens includes the cached and cache-written ones) and asks
`cost_usd(model, usage)` here; a model the table does not know costs 0, with one warning per model.
"""
from __future__ import annotations

import os
import re
import sys
from functools import lru_cache
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from harness.models.base import Usage
from rungs.core.yamlload import load_yaml_model

DEFAULT_TABLE = Path(__file__).with_name("prices.yaml")
_DATED = re.compile(r"(-\d{4}-\d{2}-\d{2}|-\d{8}|-latest)$")
_warned: set[str] = set()


class Price(BaseModel):
    """Dollars per million tokens for one model."""

    model_config = ConfigDict(extra="forbid")

    input: float
    """Uncached input tokens."""
    output: float
    """Output tokens (reasoning included)."""
    cached_input: float | None = None
    """Input tokens read from the prompt cache; left out, they cost as input."""
    cache_write: float | None = None
    """Input tokens written to the prompt cache (Anthropic); left out, they cost as input."""


class PriceTable(BaseModel):
    model_config = ConfigDict(extra="forbid")

    models: dict[str, Price]


@lru_cache(maxsize=8)
def _load(paths: tuple[Path, ...]) -> dict[str, Price]:
    table: dict[str, Price] = {}
    for path in paths:
        table.update(load_yaml_model(path, PriceTable).models)
    return table


def prices() -> dict[str, Price]:
    """The shipped table, with the entries of HARNESS_PRICES (if set) on top."""
    override = os.environ.get("HARNESS_PRICES")
    return _load((DEFAULT_TABLE, Path(override)) if override else (DEFAULT_TABLE,))


def price_of(model: str) -> Price | None:
    table = prices()
    return table.get(model) or table.get(_DATED.sub("", model))


def cost_usd(model: str, usage: Usage) -> float:
    """Dollars for one call's usage; 0 (and a one-time warning on stderr) for a model with no price."""
    price = price_of(model)
    if price is None:
        if model not in _warned:
            _warned.add(model)
            sys.stderr.write(f"warning: no price for model {model!r}: counted as $0 "
                             f"(add it to a YAML file named by HARNESS_PRICES)\n")
        return 0.0
    uncached = max(usage.input_tokens - usage.cached_tokens - usage.cache_write_tokens, 0)
    dollars = (uncached * price.input + usage.output_tokens * price.output
               + usage.cached_tokens * (price.cached_input if price.cached_input is not None else price.input)
               + usage.cache_write_tokens * (price.cache_write if price.cache_write is not None else price.input))
    return dollars / 1e6
