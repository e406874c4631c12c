"""scalesim app: start the what-if planner (Streamlit) and print its local address."""

from __future__ import annotations

import argparse

NAME = "app"
HELP = "start the what-if planner web app (Streamlit) on the built-in default profile"
EXAMPLE = """examples:
  scalesim app
  scalesim app --port 8600 --headless
  scalesim app --profiles ./my-profiles    (pick a calibration profile from a folder)"""

DEFAULT_PORT = 8501
PORT_TRIES = 100


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--port", type=int, metavar="N",
                   help=f"port to listen on (default: the first free one from {DEFAULT_PORT})")
    p.add_argument("--address", default="localhost", metavar="HOST",
                   help="address to listen on (default localhost; 0.0.0.0 for every interface)")
    p.add_argument("--profiles", metavar="DIR",
                   help="folder of calibration profile JSON files to pick from in the app")
    p.add_argument("--headless", action="store_true",
                   help="do not open a browser (for servers and tests)")


def _port_free(address: str, port: int) -> bool:
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1" if address == "localhost" else address, port))
        except OSError:
            return False
    return True


def choose_port(address: str, wanted: int | None) -> int:
    from scalesim.errors import ScalesimError

    if wanted is not None:
        if not 1 <= wanted <= 65535:
            raise ScalesimError(f"--port {wanted} is not a port number (1-65535)")
        if not _port_free(address, wanted):
            raise ScalesimError(f"port {wanted} is in use; pick another with --port or leave it "
                                "out to take the first free one")
        return wanted
    for port in range(DEFAULT_PORT, DEFAULT_PORT + PORT_TRIES):
        if _port_free(address, port):
            return port
    raise ScalesimError(f"no free port in {DEFAULT_PORT}-{DEFAULT_PORT + PORT_TRIES - 1}; "
                        "give one with --port")


def streamlit_command(script: str, port: int, address: str, headless: bool) -> list[str]:
    """``python -m streamlit run SCRIPT`` with the server options (Streamlit's supported CLI)."""
    import sys

    return [
        sys.executable, "-m", "streamlit", "run", script,
        "--server.port", str(port),
        "--server.address", address,
        "--server.headless", "true" if headless else "false",
        "--server.fileWatcherType", "none",
        "--browser.gatherUsageStats", "false",
        "--client.toolbarMode", "minimal",
    ]


def run(args: argparse.Namespace) -> int:
    import os
    import signal
    import subprocess
    from pathlib import Path

    import scalesim.app
    from scalesim.errors import ScalesimError

    # server.py holds an st.App serving streamlit_app.py, warmed up before it accepts visitors.
    script = Path(scalesim.app.__file__).with_name("server.py")
    if not script.is_file():
        raise ScalesimError(f"the app script is missing ({script}); reinstall scalesim")
    env = dict(os.environ)
    if args.profiles is not None:
        folder = Path(args.profiles).expanduser()
        if not folder.is_dir():
            raise ScalesimError(f"--profiles {args.profiles}: no such folder")
        env["SCALESIM_APP_PROFILES"] = str(folder.resolve())
    port = choose_port(args.address, args.port)
    host = "localhost" if args.address in ("localhost", "127.0.0.1", "0.0.0.0") else args.address
    print(f"scalesim app: open http://{host}:{port}/ (Ctrl-C stops it)", flush=True)
    command = streamlit_command(str(script), port, args.address, args.headless)
    child = subprocess.Popen(command, env=env)
    # Ctrl-C reaches Streamlit directly (same process group); a SIGTERM sent to this process
    # (a service manager, a test) is passed on, so Streamlit never outlives it.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, lambda signum, frame: child.send_signal(signum))
    code = child.wait()
    if code in (-signal.SIGTERM, -signal.SIGINT):  # stopped on request: not a failure
        return 0 if code == -signal.SIGTERM else 130
    return code
