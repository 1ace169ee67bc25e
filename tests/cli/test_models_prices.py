"""The inventory's prices in full (github/copilot-sdk ``ModelBillingTokenPrices`` and
``ModelBillingPromo``): cache read/write and 1-hour write prices, ``max_prompt_tokens``,
a promotion, and the price unit read rather than assumed; shown by ``models`` and carried by
``models --json``, against the loopback emulator."""

from __future__ import annotations

import json
from typing import Any

import pytest

from copilot_host.testing import Inventory, Scenario, chat_model

from .conftest import Cli

pytestmark = pytest.mark.usefixtures("copilot_home")


def _billing(unit: str | None, scale: float, **extra: object) -> dict[str, object]:
    default: dict[str, object] = {
        "input_price": 300 * scale,
        "output_price": 1500 * scale,
        "cache_read_price": 30 * scale,
        "cache_write_price": 375 * scale,
        "cache_write_1h_price": 600 * scale,
        "max_prompt_tokens": 200_000,
    }
    prices: dict[str, object] = {"batch_size": 1_000_000, "default": default}
    if unit is not None:
        prices["unit"] = unit
    return {"is_premium": True, "multiplier": 1, "token_prices": prices, **extra}


def _models(cli: Cli, emulate: Any, *models: dict[str, object]) -> tuple[Any, Any]:
    env = emulate(Scenario(inventory=Inventory(models=models)))
    assert cli("login", "--headless", seam=env.seam).exit_code == 0
    table = cli("models", seam=env.seam)
    assert table.exit_code == 0, table.stderr
    as_json = cli("models", "--json", seam=env.seam)
    assert as_json.exit_code == 0, as_json.stderr
    return table, {m["model_id"]: m for m in json.loads(as_json.stdout)["models"]}


@pytest.mark.parametrize(("unit", "scale"), [(None, 1.0), ("ai_credits", 1.0), ("nano_aiu", 1e9)])
def test_cache_prices_and_the_unit_are_read(
    cli: Cli, emulate: Any, unit: str | None, scale: float
) -> None:
    table, docs = _models(cli, emulate, chat_model("m-priced", billing=_billing(unit, scale)))
    row = next(line for line in table.stdout.splitlines() if "m-priced" in line)
    # The multiplier, then AI credits per 1M input, output and cached input tokens, in AI
    # credits whichever unit the inventory listed them in.
    assert row.split()[-4:] == ["1x", "300", "1,500", "30"]
    assert (
        "cache prices (m-priced, AI credits per 1M tokens): write 375, 1h write 600" in table.stderr
    )
    prices = docs["m-priced"]["billing"]["prices"]
    assert prices["unit"] == unit
    assert prices["cache_read"] == 30 * scale  # as listed
    assert prices["cache_write"] == 375 * scale
    assert prices["cache_write_1h"] == 600 * scale
    assert prices["max_prompt_tokens"] == 200_000
    assert prices["cache_read_per_million"] == pytest.approx(30)
    assert prices["cache_write_1h_per_million"] == pytest.approx(600)
    assert prices["input_per_million"] == pytest.approx(300)


def test_prices_without_the_new_fields_stay_as_before(cli: Cli, emulate: Any) -> None:
    old = {
        "is_premium": False,
        "multiplier": 0,
        "token_prices": {
            "batch_size": 1_000_000,
            "default": {"input_price": 25, "output_price": 200, "cache_price": 2.5},
        },
    }
    table, docs = _models(cli, emulate, chat_model("m-old", billing=old))
    row = next(line for line in table.stdout.splitlines() if "m-old" in line)
    assert row.split()[-4:] == ["0x", "25", "200", "2.5"]  # the older cache_price
    assert "cache prices" not in table.stderr
    prices = docs["m-old"]["billing"]["prices"]
    assert (prices["cache_read"], prices["cache_write"], prices["unit"]) == (None, None, None)
    assert docs["m-old"]["billing"]["promo"] is None


def test_an_unknown_unit_is_shown_as_listed_never_converted(cli: Cli, emulate: Any) -> None:
    table, docs = _models(cli, emulate, chat_model("m-odd", billing=_billing("usd_cents", 1.0)))
    row = next(line for line in table.stdout.splitlines() if "m-odd" in line)
    assert row.split()[-4:] == ["1x", "-", "-", "-"]
    assert "prices of m-odd are listed in usd_cents" in table.stderr
    prices = docs["m-odd"]["billing"]["prices"]
    assert (prices["input"], prices["input_per_million"]) == (300, None)


def test_a_promotion_is_shown_and_carried(cli: Cli, emulate: Any) -> None:
    promo = {"promo": {"discount_percent": 25, "ends_at": "2026-12-31T23:59:59Z", "id": "x"}}
    open_ended = {"promo": {"discount_percent": 12.5}}
    table, docs = _models(
        cli,
        emulate,
        chat_model("m-promo", billing=_billing(None, 1.0, **promo)),
        chat_model("m-open", billing=_billing(None, 1.0, **open_ended)),
    )
    assert "promotion (m-promo): 25% off until 2026-12-31T23:59:59Z" in table.stderr
    assert "promotion (m-open): 12.5% off\n" in table.stderr
    assert docs["m-promo"]["billing"]["promo"] == {
        "discount_percent": 25,
        "ends_at": "2026-12-31T23:59:59Z",
    }
    assert docs["m-open"]["billing"]["promo"] == {"discount_percent": 12.5, "ends_at": None}
