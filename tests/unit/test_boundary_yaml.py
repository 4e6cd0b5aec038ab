"""Scenario, grid and catalog files are bounded: no alias bombs, no deep nesting, no
duplicate keys. Each case runs in a child under a memory cap and a time limit
(tests/bounded.py), so a regression fails here rather than taking the runner down."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.bounded import assert_refused, cli, python

from accelsim._yaml import MAX_NODES, load_yaml, load_yaml_text, to_plain
from accelsim.errors import ScenarioFileError
from accelsim.scenario import load_scenario

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "llama70b_h100_aws.yaml"

# 635 bytes that expand to 9**9 (387 million) strings: the fuzzing pass's example.
LAUGHS = "".join(
    f"{name}: &{name} [{', '.join([prev] * 9)}]\n"
    for name, prev in zip("abcdefghi", ['"lol"', *("*" + c for c in "abcdefgh")], strict=True)
)


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_alias_bomb_in_a_scenario_is_refused_naming_the_file(tmp_path: Path) -> None:
    path = _write(tmp_path, "laughs.yaml", "name: x\n" + LAUGHS)
    assert_refused(cli("validate", str(path)), "laughs.yaml:2", "aliases")


def test_alias_bomb_in_a_sweep_grid_is_refused_naming_the_grid(tmp_path: Path) -> None:
    grid = _write(tmp_path, "grid.yaml", LAUGHS + "fleet.0.count: [8, *a]\n")
    proc = cli("sweep", str(EXAMPLE), "--grid", str(grid), "--runs", "10")
    assert_refused(proc, "grid.yaml:1", "aliases")


def test_alias_bomb_in_a_catalog_file_is_refused_naming_the_file(tmp_path: Path) -> None:
    path = _write(tmp_path, "prices.yaml", LAUGHS + "chips: []\n")
    code = (
        "import accelsim as acs\n"
        "from accelsim.errors import ScenarioFileError\n"
        "try:\n"
        f"    acs.catalog.load({str(path)!r})\n"
        "except ScenarioFileError as exc:\n"
        "    print(exc)\n"
    )
    proc = python(code)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "prices.yaml:1" in proc.stdout
    assert "aliases" in proc.stdout


def test_a_merge_key_is_an_alias_and_is_refused(tmp_path: Path) -> None:
    text = EXAMPLE.read_text(encoding="utf-8") + "base: &base {x: 1}\nother: {<<: *base}\n"
    with pytest.raises(ScenarioFileError, match="aliases"):
        load_scenario(_write(tmp_path, "merge.yaml", text))


def test_where_aliases_are_allowed_their_expanded_size_is_capped() -> None:
    """The shipped data files share priors by anchor; an expansion past MAX_NODES is refused
    after at most MAX_NODES steps, not after building 387 million strings."""
    code = (
        "from accelsim._yaml import load_yaml_text\n"
        "from accelsim.errors import ScenarioFileError\n"
        f"text = {LAUGHS!r}\n"
        "try:\n"
        "    load_yaml_text(text, 'shipped.yaml', aliases=True)\n"
        "except ScenarioFileError as exc:\n"
        "    print(exc)\n"
    )
    proc = python(code)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert f"shipped.yaml: the document expands to more than {MAX_NODES:,} values" in proc.stdout


def test_a_small_shared_anchor_is_fine_where_aliases_are_allowed() -> None:
    doc = load_yaml_text("a: &x {v: 1}\nb: *x\n", aliases=True)
    assert doc["b"]["v"] == 1


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("deep.yaml", "name: x\nworkload: " + "[" * 100_000 + "]" * 100_000 + "\n"),
        (
            "deep_block.yaml",
            "name: x\nworkload:\n" + "".join(f"{' ' * i}k:\n" for i in range(1, 200)),
        ),
        ("deep.json", '{"name": "x", "workload": ' + "[" * 100_000 + "]" * 100_000 + "}"),
        ("shallow_recursion.json", '{"name": "x", "workload": ' + "[" * 500 + "]" * 500 + "}"),
        ("deep.toml", 'name = "x"\nworkload = ' + "[" * 100_000 + "]" * 100_000 + "\n"),
    ],
)
def test_deep_nesting_is_refused_in_one_line(tmp_path: Path, name: str, text: str) -> None:
    path = _write(tmp_path, name, text)
    assert_refused(cli("validate", str(path)), name, "nested deeper than 64 levels")


def test_a_json_key_given_twice_is_refused_as_in_yaml(tmp_path: Path) -> None:
    data = to_plain(load_yaml(EXAMPLE))
    text = json.dumps(data)
    # the same scenario with its name given twice: JSON parsers keep the last silently
    twice = text.replace('"name": ', f'"name": {json.dumps(data["name"])}, "name": ', 1)
    path = _write(tmp_path, "twice.json", twice)
    assert load_scenario(_write(tmp_path, "once.json", text)).name == data["name"]
    assert_refused(cli("validate", str(path)), "twice.json", "duplicate key 'name'")


def test_a_file_over_the_size_cap_is_refused_before_it_is_read(tmp_path: Path) -> None:
    path = tmp_path / "huge.yaml"
    with path.open("wb") as fh:  # sparse: the cap is read from the size, not the contents
        fh.truncate(17 * 2**20)
    assert_refused(cli("validate", str(path)), "huge.yaml", "MiB")
