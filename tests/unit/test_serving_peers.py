"""The peers section of the serving calibration page (oracle: medians worked by hand)."""

from __future__ import annotations

from pathlib import Path

from accelsim._serving_peers import PeerRow, load_peers, peer_lines
from accelsim.serving_calibration import RowResult


def _rated(row_id: str, published: float, p50: float, classes: tuple[str, ...]) -> RowResult:
    return RowResult(
        row_id, "throughput", "covered", "", published, p50 / 2, p50, p50 * 2, 1, ("x",), classes
    )


def test_missing_file_gives_no_peers_and_no_section(tmp_path: Path) -> None:
    assert load_peers(tmp_path / "absent.csv") == []
    assert peer_lines([_rated("a", 100.0, 110.0, ("Offline",))], []) == []


def test_file_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "peers.csv"
    path.write_text(
        "peer,peer_version,id,status,predicted_per_chip,published_per_chip,config,note\n"
        "genz,genz-llm 0.0.16,a,ok,120,100,TP1,\n"
        "genz,genz-llm 0.0.16,b,not expressed,,50,,chip x not shipped\n",
        encoding="utf-8",
    )
    rows = load_peers(path)
    assert rows[0] == PeerRow("genz", "genz-llm 0.0.16", "a", 120.0, 100.0, "TP1", "")
    assert rows[1].predicted is None
    assert rows[1].note == "chip x not shipped"


def test_errors_are_compared_on_the_same_rows() -> None:
    results = [
        _rated("a", 100.0, 110.0, ("Offline", "dense")),  # ours 10 %
        _rated("b", 100.0, 130.0, ("Server", "dense")),  # ours 30 %
        _rated("c", 100.0, 150.0, ("Server", "MoE")),  # ours 50 %, the peer has no value
    ]
    peers = [
        PeerRow("p", "p 1.0", "a", 200.0, 100.0, "", ""),  # peer 100 %
        PeerRow("p", "p 1.0", "b", 80.0, 100.0, "", ""),  # peer 20 %
        PeerRow("p", "p 1.0", "c", None, 100.0, "", "chip q not shipped"),
    ]
    text = "\n".join(peer_lines(results, peers))
    assert "| all rows | 2 | 60.0 % | 20.0 % |" in text  # medians of {100, 20} and {10, 30}
    assert "| Offline | 1 | 100.0 % | 10.0 % |" in text
    assert "| Server | 1 | 20.0 % | 30.0 % |" in text
    assert "| MoE | 0 | - | - |" in text
    assert "does not express: chip q not shipped (1)" in text
    assert "`c`" not in text  # no peer value: not in the per-row table
