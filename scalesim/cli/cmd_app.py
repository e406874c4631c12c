"""scalesim app: start the what-if planner (Streamlit) and print its local address.

Streamlit always runs headless (no first-run "Email:" prompt, which would stop the command on a
fresh machine or hang it without a terminal); unless ``--headless`` is given, this command opens
the browser itself once the server answers, where there is a browser to open.
"""

from __future__ import annotations

import argparse

NAME = "app"
HELP = "start the what-if planner web app (Streamlit) on the built-in default profile"
EXAMPLE = """examples:
  scalesim app
  scalesim app --port 8600 --headless
  scalesim app --profiles ./my-profiles    (pick a calibration profile from a folder)
  scalesim app --headless --address 0.0.0.0 --public-url https://planner.example.com/"""

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
    p.add_argument("--public-url", metavar="URL",
                   help="the address people you share links with will reach (e.g. "
                   "https://planner.example.com/); share links and reports use it")


def _bind_target(address: str, port: int) -> tuple[int, tuple]:
    """(socket family, socket address) to bind ``address`` (a name, IPv4 or IPv6) at ``port``;
    socket.gaierror where the name resolves to nothing."""
    import socket

    host = "127.0.0.1" if address == "localhost" else address
    family, _, _, _, sockaddr = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    return family, sockaddr


def _port_free(address: str, port: int) -> bool:
    """Whether ``port`` is free at ``address``: False where another program holds it (or it
    needs privileges); OSError where the address itself cannot be listened on
    (``check_address`` says so first)."""
    import errno
    import socket

    family, sockaddr = _bind_target(address, port)
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(sockaddr)
        except OSError as exc:
            if exc.errno in (errno.EADDRINUSE, errno.EACCES):
                return False
            raise
    return True


def check_address(address: str) -> str:
    """The host of the printed URL for ``--address`` ('localhost' for this machine's loopback or
    every interface; an IPv6 address in brackets); ScalesimError where the address is empty or
    this machine cannot listen on it (a mistyped or another machine's address), which the port
    search would have blamed on the ports ('no free port in 8501-8600')."""
    import socket

    from scalesim.errors import ScalesimError, one_line

    fix = ("give localhost, 0.0.0.0 (every interface) or an address of this machine's own "
           "network interfaces")
    if not address.strip():
        raise ScalesimError(f"--address is empty; {fix}")
    try:
        family, sockaddr = _bind_target(address, 0)
        with socket.socket(family, socket.SOCK_STREAM) as sock:
            sock.bind(sockaddr)
    except (OSError, UnicodeError) as exc:
        reason = getattr(exc, "strerror", None) or type(exc).__name__
        raise ScalesimError(f"--address {one_line(repr(address))}: this machine cannot listen "
                            f"there ({reason}); {fix}") from None
    if address in ("localhost", "127.0.0.1", "0.0.0.0", "::", "0"):
        return "localhost"
    return f"[{address}]" if ":" in address else address


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


PUBLIC_URL_ENV = "SCALESIM_PUBLIC_URL"  # read by the page for share links
HEALTH_TIMEOUT_S = 120


def check_public_url(url: str) -> tuple[str, str | None]:
    """(normalised URL, warning or None) for ``--public-url``; ScalesimError when not a URL."""
    from urllib.parse import urlsplit

    from scalesim.errors import ScalesimError

    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.query or (
            parts.fragment) or len(url) > 400:
        raise ScalesimError(f"--public-url {url[:60]!r} is not an http(s) address like "
                            "https://planner.example.com/")
    normal = url.strip() if parts.path else url.strip() + "/"
    warning = None
    if parts.hostname in ("localhost", "127.0.0.1", "::1", "0.0.0.0"):
        warning = (f"--public-url {normal} is this machine's own address: links will not open "
                   "on anyone else's computer")
    return normal, warning


def can_open_browser() -> bool:
    """True where a graphical browser can be opened (never a text browser in this terminal)."""
    import os
    import sys
    import webbrowser

    if sys.platform.startswith("linux") and not (os.environ.get("DISPLAY")
                                                 or os.environ.get("WAYLAND_DISPLAY")):
        return False
    try:
        webbrowser.get()
    except webbrowser.Error:
        return False
    return True


def _open_when_healthy(url: str, child, timeout_s: float = HEALTH_TIMEOUT_S) -> None:
    """Open ``url`` in the browser once Streamlit's health endpoint answers (a thread)."""
    import time
    import urllib.request
    import webbrowser

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and child.poll() is None:
        try:
            with urllib.request.urlopen(url + "_stcore/health", timeout=2):
                webbrowser.open(url)
                return
        except OSError:
            time.sleep(0.3)


def streamlit_command(script: str, port: int, address: str) -> list[str]:
    """``python -m streamlit run SCRIPT`` with the server options (Streamlit's supported CLI).

    Always headless: Streamlit's own browser start asks for an e-mail address on first run;
    ``run`` opens the browser itself unless ``--headless``.
    """
    import sys

    return [
        sys.executable, "-m", "streamlit", "run", script,
        "--server.port", str(port),
        "--server.address", address,
        "--server.headless", "true",  # never the first-run e-mail prompt; we open the browser
        "--server.fileWatcherType", "none",
        "--browser.gatherUsageStats", "false",
        "--client.toolbarMode", "minimal",
    ]


def run(args: argparse.Namespace) -> int:
    import os
    import signal
    import subprocess
    import sys
    import threading
    from pathlib import Path

    import scalesim.app
    from scalesim.errors import ScalesimError

    # server.py holds an st.App serving streamlit_app.py, warmed up before it accepts visitors.
    script = Path(scalesim.app.__file__).with_name("server.py")
    if not script.is_file():
        raise ScalesimError(f"the app script is missing ({script}); reinstall scalesim")
    env = dict(os.environ)
    if args.profiles == "":  # Path('') is '.': the current folder, not what was meant
        raise ScalesimError("--profiles: the folder name is empty; give a folder of profiles")
    if args.profiles is not None:
        folder = Path(args.profiles).expanduser()
        if folder.is_file():
            raise ScalesimError(f"--profiles {args.profiles}: is a file, not a folder; give the "
                                "folder that holds your profiles")
        if not folder.is_dir():
            raise ScalesimError(f"--profiles {args.profiles}: no such folder")
        env["SCALESIM_APP_PROFILES"] = str(folder.resolve())
    if args.public_url is not None:
        public, warning = check_public_url(args.public_url)
        env[PUBLIC_URL_ENV] = public
        if warning:
            print(f"scalesim app: warning: {warning}", file=sys.stderr, flush=True)
    host = check_address(args.address)
    port = choose_port(args.address, args.port)
    url = f"http://{host}:{port}/"
    print(f"scalesim app: open {url} (Ctrl-C stops it)", flush=True)
    command = streamlit_command(str(script), port, args.address)
    child = subprocess.Popen(command, env=env, stdin=subprocess.DEVNULL)
    if not args.headless and can_open_browser():
        threading.Thread(target=_open_when_healthy, args=(url, child), daemon=True).start()
    # Ctrl-C reaches Streamlit directly (same process group); a SIGTERM sent to this process
    # (a service manager, a test) is passed on, so Streamlit never outlives it.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, lambda signum, frame: child.send_signal(signum))
    code = child.wait()
    if code in (-signal.SIGTERM, -signal.SIGINT):  # stopped on request: not a failure
        return 0 if code == -signal.SIGTERM else 130
    return code
