"""`scalesim app`: arguments, port choice and the Streamlit command it runs."""

from __future__ import annotations

import socket
import sys
from pathlib import Path

import pytest
import scalesim.app
from scalesim.app import server as app_server

from scalesim.cli.cmd_app import choose_port, streamlit_command
from scalesim.cli.main import main
from scalesim.errors import ScalesimError


def test_help_lists_the_options(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["app", "--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    for option in ("--port", "--profiles", "--headless"):
        assert option in out


def test_missing_profiles_folder_is_one_line_error(tmp_path, capsys):
    assert main(["app", "--headless", "--profiles", str(tmp_path / "nope")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("scalesim app: error: --profiles") and "\n" not in err


def test_busy_port_is_refused_and_a_free_one_chosen():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        busy = sock.getsockname()[1]
        with pytest.raises(ScalesimError, match="in use"):
            choose_port("localhost", busy)
        assert choose_port("localhost", None) != busy
    with pytest.raises(ScalesimError, match="not a port"):
        choose_port("localhost", 70000)


def test_runs_the_supported_streamlit_cli_on_the_installed_script():
    script = Path(scalesim.app.__file__).with_name("server.py")
    command = streamlit_command(str(script), 8600, "localhost", True)
    assert command[:4] == [sys.executable, "-m", "streamlit", "run"]
    assert Path(command[4]).is_file()
    assert command[command.index("--server.port") + 1] == "8600"
    assert command[command.index("--server.headless") + 1] == "true"
    assert Path(app_server.app.script_path).name == "streamlit_app.py"


def test_warm_up_builds_the_default_plan():
    app_server.warm_up()  # raises if the page's modules or the default plan are broken
