"""rfviz for a classroom: several app processes behind Debian's nginx, at one address (``./run classroom``).

One Streamlit process runs its sessions' scripts largely one at a time (Python's GIL), so a room of students each
moving a slider to a value nobody chose before queues on one core. This starts ``--processes`` app servers on
private loopback ports and nginx in front of them: nginx pins each browser to one server with a cookie it sets
itself (``rfviz_server``, hashed with ``hash … consistent``), so a student's WebSocket, file uploads and reconnects
all reach the server that holds their session. nginx does all the proxying; this file only writes its
configuration, starts and watches the processes, and stops them all (Ctrl-C or SIGTERM) leaving nothing behind: the
configuration, logs and nginx's temporary files live in one private temporary directory, removed at exit.

The room's processes share one store (rfviz.server.room: the students' anonymous predictions and the step the
teacher opened), a SQLite file in the private temporary directory (``RFVIZ_CLASSROOM_DB``), and the teacher's key
(``RFVIZ_TEACHER_KEY``, fresh for each room): the launcher prints the students' link and the teacher's
``…/teach?key=K``.

Each server keeps its own caches (a value computed on one is computed again on another) and its own Monte-Carlo
pool: ``RFVIZ_MC_WORKERS`` is set to share out half the cores, as one server's pool uses, with at least one worker
per process (so on 2 cores with 2 processes, one each: both cores can run Monte Carlo at once).

Usage::

    ./run classroom [--processes N] [--port 8501] [--address 0.0.0.0] [-- streamlit options]

Exit status: 0 after SIGTERM, 130 after Ctrl-C, 2 for a refused argument or a missing nginx (one line), 1 when a
server or nginx stops on its own (the end of its log is printed).
"""

from __future__ import annotations

import argparse
import os
import pathlib
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Sequence

ROOT = pathlib.Path(__file__).resolve().parent
COOKIE = "rfviz_server"
MEMORY_PER_PROCESS = 600 * 2**20
"""Resident memory one app server may reach with a class on it (measured ≈ 300–450 MiB, bench/README.md)."""
MAX_PROCESSES = 32
START_SECONDS = 120.0

NGINX_CONF = """\
worker_processes 1;
pid {tmp}/nginx.pid;
error_log {tmp}/nginx-error.log warn;
events {{ worker_connections 1024; }}
http {{
    access_log off;
    client_body_temp_path {tmp}/body;
    proxy_temp_path {tmp}/proxy;
    fastcgi_temp_path {tmp}/fastcgi;
    uwsgi_temp_path {tmp}/uwsgi;
    scgi_temp_path {tmp}/scgi;
    client_max_body_size {upload_mib}m;
    map $http_upgrade $connection_upgrade {{ default upgrade; '' close; }}
    # a browser without the cookie gets a random route (the request's id), kept from then on in the cookie
    map $cookie_{cookie} $route {{ "" $request_id; default $cookie_{cookie}; }}
    upstream rfviz {{
        hash $route consistent;
{servers}
    }}
    server {{
        listen {address}:{port};
        location / {{
            proxy_pass http://rfviz;
            proxy_http_version 1.1;
            proxy_set_header Host $http_host;
            proxy_set_header Upgrade $http_upgrade;
            proxy_set_header Connection $connection_upgrade;
            proxy_read_timeout 1d;
            proxy_send_timeout 1d;
            proxy_buffering off;
            add_header Set-Cookie "{cookie}=$route; Path=/; HttpOnly; SameSite=Lax";
            add_header X-Rfviz-Server $upstream_addr;
        }}
    }}
}}
"""


class Refused(Exception):
    """An argument or a missing program: one line, exit 2."""


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    """The command line; anything after ``--`` goes to every ``streamlit run``."""
    argv = list(argv)
    extra = argv[argv.index("--") + 1:] if "--" in argv else []
    argv = argv[:argv.index("--")] if "--" in argv else argv
    from rfviz.cli import OneLineParser  # a usage error is one line on stderr and exit 2, as on every rfviz command

    ap = OneLineParser(prog="./run classroom", description=__doc__.split("\n\n")[0])
    ap.add_argument("--processes", type=int, default=os.cpu_count() or 2,
                    help="app server processes (default: one per core)")
    ap.add_argument("--port", type=int, default=8501, help="the port students open (default 8501)")
    ap.add_argument("--address", default="0.0.0.0",
                    help="the address nginx listens on (default 0.0.0.0: every interface, for a room's laptops)")
    args = ap.parse_args(argv)
    args.streamlit = extra
    return args


def check(args: argparse.Namespace) -> str:
    """Refuse what cannot run, before anything starts; return nginx's path."""
    if not 1 <= args.processes <= MAX_PROCESSES:
        raise Refused(f"--processes must be in [1, {MAX_PROCESSES}], got {args.processes}")
    if not 1 <= args.port <= 65535:
        raise Refused(f"--port must be in [1, 65535], got {args.port}")
    available = _available_memory()
    if available is not None and args.processes * MEMORY_PER_PROCESS > available:
        raise Refused(f"--processes {args.processes} needs ≈ {args.processes * MEMORY_PER_PROCESS / 2**30:.1f} GiB "
                      f"of memory, {available / 2**30:.1f} GiB is available: choose fewer")
    nginx = shutil.which("nginx") or next((p for p in ("/usr/sbin/nginx", "/sbin/nginx") if os.access(p, os.X_OK)),
                                          None)
    if nginx is None:
        raise Refused("nginx not found: install Debian's (apt-get install nginx-light), or serve one process with "
                      "./run app")
    try:
        with socket.socket() as s:
            s.bind((args.address, args.port))
    except OSError as exc:
        raise Refused(f"cannot listen on {args.address}:{args.port}: {exc.strerror or exc}") from None
    return nginx


def _available_memory() -> int | None:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def free_port() -> int:
    """A loopback TCP port nothing listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_servers(count: int, tmp: pathlib.Path, extra: Sequence[str],
                  room: dict[str, str] | None = None) -> list[tuple[int, subprocess.Popen]]:
    """``count`` Streamlit servers of app.py on loopback ports, each logging to ``tmp``/server-<port>.log, with the
    room's environment (``room_environment``) added to theirs."""
    workers = str(max(1, (os.cpu_count() or 2) // 2 // count))
    env = {"RFVIZ_MC_WORKERS": workers, **os.environ, **(room or {}), "PYTHONPATH": os.pathsep.join(
        p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)}
    servers = []
    for _ in range(count):
        port = free_port()
        with open(tmp / f"server-{port}.log", "wb") as log:  # the child keeps its own copy of the descriptor
            proc = subprocess.Popen([sys.executable, "-m", "streamlit", "run", str(ROOT / "app.py"),
                                     "--server.headless", "true", "--server.address", "127.0.0.1",
                                     "--server.port", str(port), "--browser.gatherUsageStats", "false", *extra],
                                    cwd=ROOT, env=env, stdin=subprocess.DEVNULL, stdout=log,
                                    stderr=subprocess.STDOUT, start_new_session=True)
        servers.append((port, proc))
    return servers


def wait_healthy(url: str, procs: Sequence[subprocess.Popen], seconds: float = START_SECONDS) -> None:
    """Return once ``url``/_stcore/health answers 200; raise RuntimeError if a process in ``procs`` exits or
    ``seconds`` pass first."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if any(p.poll() is not None for p in procs):
            raise RuntimeError(f"{url}: a process exited while starting")
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            time.sleep(0.3)
    raise RuntimeError(f"{url}: not answering after {seconds:.0f} s")


def room_environment(tmp: pathlib.Path) -> dict[str, str]:
    """The room's store, created in the private folder ``tmp`` (removed with the room), and a fresh teacher's key:
    the environment every app process of the room gets (``RFVIZ_CLASSROOM_DB``, ``RFVIZ_TEACHER_KEY``)."""
    from rfviz.server.room import ENV_DB, ENV_KEY, Room, new_key

    path = tmp / "room.sqlite3"
    Room(path)  # the file and its tables, private to this user, before any app process opens it
    return {ENV_DB: str(path), ENV_KEY: new_key()}


def nginx_conf(tmp: pathlib.Path, ports: Sequence[int], address: str, port: int) -> str:
    """nginx's configuration: ``ports`` behind ``address``:``port``, sticky by cookie."""
    from rfviz import data
    from rfviz.compute import sweep_files

    upload_mib = max(data.MAX_FILE_BYTES, sweep_files.MAX_BYTES) // 2**20 + 1
    servers = "\n".join(f"        server 127.0.0.1:{p} max_fails=0;" for p in ports)
    return NGINX_CONF.format(tmp=tmp, upload_mib=upload_mib, cookie=COOKIE, servers=servers, address=address,
                             port=port)


def start_nginx(nginx: str, tmp: pathlib.Path, ports: Sequence[int], address: str, port: int) -> subprocess.Popen:
    """nginx in the foreground, its files in ``tmp``."""
    for sub in ("body", "proxy", "fastcgi", "uwsgi", "scgi"):
        (tmp / sub).mkdir()
    (tmp / "nginx.conf").write_text(nginx_conf(tmp, ports, address, port))
    with open(tmp / "nginx-error.log", "ab") as log:
        return subprocess.Popen([nginx, "-p", str(tmp), "-e", str(tmp / "nginx-error.log"), "-c",
                                 str(tmp / "nginx.conf"), "-g", "daemon off;"], stdin=subprocess.DEVNULL,
                                stdout=log, stderr=subprocess.STDOUT, start_new_session=True)


def stop(procs: Sequence[subprocess.Popen], seconds: float = 20.0) -> None:
    """SIGTERM to each process group, then SIGKILL to what is left after ``seconds``."""
    for p in procs:
        _signal_group(p, signal.SIGTERM)
    deadline = time.monotonic() + seconds
    for p in procs:
        try:
            p.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            _signal_group(p, signal.SIGKILL)
            p.wait()


def _signal_group(p: subprocess.Popen, sig: int) -> None:
    try:
        os.killpg(p.pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _tail(path: pathlib.Path, lines: int = 15) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(max(0, os.fstat(f.fileno()).st_size - 8192))
            return "\n".join(f.read().decode("utf-8", "replace").splitlines()[-lines:])
    except OSError:
        return ""


def serve(args: argparse.Namespace, nginx: str, tmp: pathlib.Path) -> int:
    """Start everything, print the address, watch until a signal (130 for Ctrl-C, 0 for SIGTERM) or a process
    stopping on its own (1, with its log's end)."""
    room = room_environment(tmp)
    servers = start_servers(args.processes, tmp, args.streamlit, room)
    procs = [p for _, p in servers]
    logs = {p: (f"app server on port {port}", tmp / f"server-{port}.log") for port, p in servers}
    try:
        for port, p in servers:
            wait_healthy(f"http://127.0.0.1:{port}", [p])
        front = start_nginx(nginx, tmp, [port for port, _ in servers], args.address, args.port)
        procs.append(front)
        logs[front] = ("nginx", tmp / "nginx-error.log")
        host = "127.0.0.1" if args.address in ("0.0.0.0", "::") else args.address
        wait_healthy(f"http://{host}:{args.port}", [front], seconds=30)
        print(f"rfviz classroom: http://{host}:{args.port} ({args.processes} app processes behind nginx; "
              f"Ctrl-C stops them)", flush=True)
        print(f"  students: http://{host}:{args.port}/learn\n  teacher:  http://{host}:{args.port}/teach?key="
              f"{room['RFVIZ_TEACHER_KEY']}  (keep this link to yourself)", flush=True)
        while True:
            ended = next((p for p in procs if p.poll() is not None), None)
            if ended is not None:
                name, log = logs[ended]
                print(f"classroom: the {name} stopped (exit {ended.returncode}):\n{_tail(log)}", file=sys.stderr)
                return 1
            time.sleep(0.5)
    except RuntimeError as exc:
        ended = next((p for p in procs if p.poll() is not None), procs[-1])
        print(f"classroom: {exc}\n{_tail(logs[ended][1])}", file=sys.stderr)
        return 1
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C must not leave a process running
        stop(procs)


def _terminate(signum: int, frame: object) -> None:
    raise SystemExit(0)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        nginx = check(args)
    except Refused as exc:
        print(f"classroom: {exc}", file=sys.stderr)
        return 2
    signal.signal(signal.SIGTERM, _terminate)
    tmp = pathlib.Path(tempfile.mkdtemp(prefix="rfviz-classroom-"))
    try:
        return serve(args, nginx, tmp)
    except KeyboardInterrupt:
        return 130
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
