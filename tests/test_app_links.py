"""Links a manager can open: the public address, a short v2 link, the receiver's banner."""

from __future__ import annotations

from app_harness import open_app


def test_the_share_link_uses_the_public_url_and_warns_on_localhost(monkeypatch):
    monkeypatch.setenv("SCALESIM_PUBLIC_URL", "https://planner.example.com/")
    at = open_app({"v": "2", "strat": "zero3"})
    link = at.code[0].value
    assert link.startswith("https://planner.example.com/?v=2&")
    assert "strat=zero3" in link and len(link) < 300
    assert not any("localhost" in c.value for c in at.caption)
    monkeypatch.setenv("SCALESIM_PUBLIC_URL", "http://localhost:8501/")
    at = open_app()
    assert any("opens only here" in c.value for c in at.caption)


def test_the_receiver_sees_a_banner_and_can_compare_with_their_settings():
    at = open_app({"v": "2", "strat": "zero3", "at": "2026-11-30"})
    banner = at.info[0].value
    assert banner.startswith("Shared what-if from 2026-11-30, ")
    at.toggle(key="compare_shared").set_value(True)
    at.sidebar.selectbox(key="k_strat").set_value("ddp")
    at.run()
    assert not at.exception
    table = at.dataframe[0].value
    assert list(table["what-if"]) == ["shared", "mine"]
    throughput = table.columns[2]
    assert table.iloc[0][throughput] != table.iloc[1][throughput]  # zero3 vs ddp


def test_a_link_without_a_date_has_no_banner_and_a_bad_date_is_ignored():
    assert not any("Shared what-if" in i.value for i in open_app({"v": "2"}).info)
    assert not any("Shared what-if" in i.value for i in open_app({"v": "2", "at": "<b>"}).info)
