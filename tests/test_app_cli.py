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


def test_an_empty_profiles_folder_name_is_refused(capsys):
    """``--profiles ''`` (an unset variable) would be Path('.'): the current folder served."""
    assert main(["app", "--headless", "--profiles", ""]) == 2
    err = capsys.readouterr().err
    assert err.startswith("scalesim app: error: --profiles") and "empty" in err, err


def test_a_profile_file_given_as_the_profiles_folder_says_so(tmp_path, capsys):
    """``--profiles my-node.json`` (a file, where the app wants the folder of profiles) said
    "no such folder" of a path that exists; it says that it is a file and what to give now."""
    path = tmp_path / "my-node.json"
    path.write_text("{}")
    assert main(["app", "--headless", "--profiles", str(path)]) == 2
    err = capsys.readouterr().err
    assert "is a file, not a folder" in err and "no such" not in err and err.count("\n") == 1


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
    command = streamlit_command(str(script), 8600, "localhost")
    assert command[:4] == [sys.executable, "-m", "streamlit", "run"]
    assert Path(command[4]).is_file()
    assert command[command.index("--server.port") + 1] == "8600"
    # always headless (never Streamlit's first-run e-mail prompt); `scalesim app` opens the browser
    assert command[command.index("--server.headless") + 1] == "true"
    assert Path(app_server.app.script_path).name == "streamlit_app.py"


def test_warm_up_builds_the_default_plan():
    app_server.warm_up()  # raises if the page's modules or the default plan are broken


def test_public_url_is_checked_and_localhost_warned():
    from scalesim.cli.cmd_app import check_public_url

    assert check_public_url("https://planner.example.com") == ("https://planner.example.com/",
                                                               None)
    url, warning = check_public_url("http://localhost:8501/")
    assert url == "http://localhost:8501/" and "this machine" in warning
    for bad in ("planner.example.com", "ftp://x/", "https://x/?a=1"):
        with pytest.raises(ScalesimError, match="--public-url"):
            check_public_url(bad)


@pytest.mark.slow
def test_app_without_headless_starts_with_no_prompt_on_a_fresh_machine(tmp_path):
    """A fresh HOME (no ~/.streamlit), stdin not a terminal, no display: it becomes healthy."""
    import os
    import signal
    import subprocess
    import time
    import urllib.request

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    env.update(HOME=str(tmp_path), PYTHONUNBUFFERED="1")
    proc = subprocess.Popen([sys.executable, "-m", "scalesim.cli.main", "app", "--port",
                             str(port)], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, env=env)
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health",
                                            timeout=2):
                    break
            except OSError:
                assert proc.poll() is None, proc.stdout.read()
                assert time.monotonic() < deadline, "never became healthy"
                time.sleep(0.3)
    finally:
        proc.send_signal(signal.SIGTERM)
        out = proc.communicate(timeout=30)[0]
    assert "Email" not in out
    assert not (tmp_path / ".streamlit" / "credentials.toml").exists()


def test_an_address_this_machine_cannot_listen_on_is_named_not_the_ports(capsys, monkeypatch):
    """``app --address 1.2.3.4`` (not this machine's) said "no free port in 8501-8600; give one
    with --port", which no port fixes, and ``--address ''`` started Streamlit with an empty
    address and printed "open http://:8501/", a link that opens nothing (session 46). The
    address is checked first (``cmd_app.check_address``): one line naming it and what to give;
    loopback and every-interface addresses print localhost. Streamlit is never started here."""
    import subprocess

    class NoStreamlit:  # the child the command starts: exits at once
        def __init__(self, *args, **kwargs):
            self.args = args

        def wait(self, timeout=None):
            return 0

    monkeypatch.setattr(subprocess, "Popen", NoStreamlit)
    monkeypatch.setattr("signal.signal", lambda *args: None)
    for address in ("", " ", "1.2.3.4", "1.2.3"):  # numeric: no name is looked up
        code = main(["app", "--headless", "--address", address])
        out, err = capsys.readouterr()
        assert code == 2 and err.count("\n") == 1 and out == "", (address, err)
        assert "--address" in err and "give localhost, 0.0.0.0" in err and "port" not in err
    from scalesim.cli.cmd_app import check_address

    assert check_address("0.0.0.0") == check_address("127.0.0.1") == "localhost"
    assert main(["app", "--headless", "--address", "0.0.0.0"]) == 0
    out, _ = capsys.readouterr()
    assert out.startswith("scalesim app: open http://localhost:")
