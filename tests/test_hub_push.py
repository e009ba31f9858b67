"""`--push-to-hub REPO [--private]` (injector/curate/hub.py) against a local stand-in of the Hub's HTTP API
(tests/hub_standin.py): the card arrives as README.md, with the Parquet files and every export; failures are one
line naming what to do, and the split stays written."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from hub_standin import HubStandIn  # noqa: E402

from injector.curate.hub import push_split  # noqa: E402
from injector.util.errors import UserError  # noqa: E402


@pytest.fixture
def hub(monkeypatch):
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)  # CI runs with HF_HUB_OFFLINE=1
    monkeypatch.setenv("HF_TOKEN", "hf_stand_in_token")
    with HubStandIn() as standin:
        monkeypatch.setenv("HF_ENDPOINT", standin.url)
        yield standin


def split_dir(tmp_path: Path) -> Path:
    out = tmp_path / "split"
    for name, text in {"README.md": "---\nlicense: mit\n---\n# card\n", "parquet/test.parquet": "PAR1",
                       "jsonl/test.jsonl": "{}\n", "prmbench/circular.jsonl": "{}\n",
                       "processbench/test.jsonl": "{}\n", "judge/test.jsonl": "{}\n", "projudge/test.jsonl": "{}\n",
                       "test/data-00000-of-00001.arrow": "arrow", "dataset_dict.json": "{}"}.items():
        (out / name).parent.mkdir(parents=True, exist_ok=True)
        (out / name).write_text(text)
    return out


def test_a_push_delivers_the_card_the_parquet_files_and_every_export(hub, tmp_path):
    url = push_split(split_dir(tmp_path), "me/bench", private=True, toolkit_version="9.9")
    repo = hub.state.repos["me/bench"]
    assert repo["type"] == "dataset" and repo["private"] is True
    assert sorted(repo["files"]) == ["README.md", "jsonl/test.jsonl", "judge/test.jsonl", "parquet/test.parquet",
                                     "prmbench/circular.jsonl", "processbench/test.jsonl", "projudge/test.jsonl"]
    assert repo["files"]["README.md"].startswith(b"---\nlicense: mit")
    assert repo["commits"] == ["Split built with prm-injector 9.9"] and "me/bench" in url
    assert all(value == "Bearer hf_stand_in_token" for value in hub.state.authorizations)


def test_a_public_push_is_public(hub, tmp_path):
    push_split(split_dir(tmp_path), "me/open")
    assert hub.state.repos["me/open"]["private"] is False


def test_a_refused_push_is_one_line_and_keeps_the_split(hub, tmp_path, monkeypatch):
    out = split_dir(tmp_path)
    hub.server.shutdown()
    hub.server.server_close()
    with pytest.raises(UserError, match=r"cannot reach the Hub .*the split is written at .*hf upload me/x") as info:
        push_split(out, "me/x")
    assert "\n" not in str(info.value) and (out / "README.md").exists()


def test_offline_mode_is_named(tmp_path, monkeypatch):
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")
    with pytest.raises(UserError, match="HF_HUB_OFFLINE is set"):
        push_split(split_dir(tmp_path), "me/x")
