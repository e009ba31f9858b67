"""Shared fixtures: no network but 127.0.0.1, a scripted OpenAI-compatible server, the bundled taxonomy."""
from __future__ import annotations

import ipaddress
import os
import socket
import sys
from pathlib import Path

import pytest

# Offline before anything imports litellm or datasets.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("LITELLM_OFFLINE_MODE", "true")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")

sys.path.insert(0, str(Path(__file__).parent))
from scripted_server import ScriptedServer  # noqa: E402

TESTS_DIR = Path(__file__).parent
FIXTURES = TESTS_DIR / "fixtures"

_real_connect = socket.socket.connect


def _loopback_only(self: socket.socket, address) -> None:  # type: ignore[no-untyped-def]
    if self.family in (socket.AF_INET, socket.AF_INET6):
        host = address[0]
        try:
            loopback = ipaddress.ip_address(host).is_loopback
        except ValueError:
            loopback = host == "localhost"
        if not loopback:
            raise ConnectionRefusedError(f"tests may not reach {host}: only 127.0.0.1 is allowed")
    return _real_connect(self, address)


@pytest.fixture(autouse=True)
def no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """Nothing in the tests reaches any address but loopback."""
    monkeypatch.setattr(socket.socket, "connect", _loopback_only)


@pytest.fixture(autouse=True)
def private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Each test gets its own request cache directory (platformdirs follows XDG_CACHE_HOME)."""
    cache = tmp_path / "xdg-cache"
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    return cache


@pytest.fixture(params=["litellm", "openai"])
def scripted_server(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch):
    """The scripted server, once for each LLM client: every test that talks to it runs through litellm and through
    the openai SDK (INJECT_CLIENT is the default of `LLMEngine(client=...)` and of `inject run --client`)."""
    monkeypatch.setenv("INJECT_CLIENT", request.param)
    server = ScriptedServer().start()
    server.client = request.param
    yield server
    server.stop()


@pytest.fixture
def fixtures_dir() -> Path:
    return FIXTURES
