"""Names and texts are capped at the boundary: a 1 MB option name is refused at once, in one
short line, instead of travelling into every table, message and close-match search.
The CLI cases run in a child under a memory cap and a time limit (tests/bounded.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError
from tests.bounded import assert_refused, cli

import accelsim as acs
from accelsim.scenario import MAX_NAME_CHARS, MAX_TEXT_CHARS

MEGABYTE = "x" * 2**20
BODY = (
    "workload: {{kind: training, params: 7e9, tokens: 1e11}}\n"
    "fleet: [{{chip: {chip}, count: 8, provider: {provider}}}]\n"
)


def _write(tmp_path: Path, name: str = "x", chip: str = "h100-sxm", provider: str = "aws") -> Path:
    path = tmp_path / "s.yaml"
    path.write_text(f"name: {name}\n" + BODY.format(chip=chip, provider=provider), "utf-8")
    return path


def test_a_megabyte_scenario_name_is_refused_in_one_short_line(tmp_path: Path) -> None:
    line = assert_refused(cli("validate", str(_write(tmp_path, name=MEGABYTE))), "s.yaml:1", "name")
    assert f"at most {MAX_NAME_CHARS} characters" in line
    assert len(line) < 300


@pytest.mark.parametrize("field", ["chip", "provider"])
def test_a_megabyte_id_is_refused_in_one_short_line(tmp_path: Path, field: str) -> None:
    line = assert_refused(cli("validate", str(_write(tmp_path, **{field: MEGABYTE}))), "s.yaml:3")
    assert f"at most {MAX_TEXT_CHARS} characters" in line
    assert len(line) < 300


def test_a_name_at_the_cap_is_fine_and_one_over_is_not() -> None:
    base = acs.Scenario(
        name="x",
        workload=acs.TrainingRun(params=7e9, tokens=1e11),
        fleet=[acs.Pool(chip="h100-sxm", count=8, provider="aws")],
    )
    assert len(base.model_copy(update={"name": "n" * MAX_NAME_CHARS}).name) == MAX_NAME_CHARS
    with pytest.raises(ValidationError, match="at most 200 characters"):
        acs.Scenario.model_validate({**base.model_dump(), "name": "n" * (MAX_NAME_CHARS + 1)})


def test_a_megabyte_option_name_in_compare_is_refused_quoting_40_characters() -> None:
    s = acs.Scenario(
        name="x",
        workload=acs.TrainingRun(params=7e9, tokens=1e11),
        fleet=[acs.Pool(chip="h100-sxm", count=8, provider="aws")],
    )
    with pytest.raises(ValueError, match="option names are text of 1 to 200") as info:
        acs.compare({MEGABYTE: s}, runs=10, seed=1)
    assert f"({len(MEGABYTE):,} characters)" in str(info.value)
    assert len(str(info.value)) < 200
