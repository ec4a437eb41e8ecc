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

Nothing outlives the launcher, however it ends (``kill -9``, an OOM kill, a closed terminal included): every app
server and nginx run in a process group of their own and get SIGKILL when the launcher dies (``PR_SET_PDEATHSIG``);
a small watchdog (``rfviz.server.processes.Reaper``, in a session of its own, so a terminal's signals miss it) sees
the launcher's end on a pipe, SIGKILLs those groups (nginx's worker included) and removes the temporary directory.
Each start also removes the directories of earlier launchers that are no longer running (in case the watchdog
itself was killed). Started as root, nginx's worker runs as ``nobody`` with temporary directories of its own that it
can write (request bodies over 16 KiB — uploads — are buffered there). SIGINT is honoured even when the launcher was
started in the background from a script (which starts it with SIGINT ignored).

It prints the address to share: the machine's own network address when nginx listens on every interface (any
machine that reaches this one on the port can open it), 127.0.0.1 when it listens on loopback (this machine only).

Each server keeps its own caches (a value computed on one is computed again on another) and its own Monte-Carlo
pool: ``RFVIZ_MC_WORKERS`` is set to share out half the cores, as one server's pool uses, with at least one worker
per process (so on 2 cores with 2 processes, one each: both cores can run Monte Carlo at once).

Usage::

    ./run classroom [--processes N] [--port 8501] [--address 0.0.0.0] [-- streamlit options]

Exit status: 0 after SIGTERM, 130 after Ctrl-C, 129 after SIGHUP, 2 for a refused argument or a missing nginx (one
line), 1 when a server or nginx stops on its own or does not start (the end of its log is printed).
"""

from __future__ import annotations

import argparse
import ipaddress
import os
import pathlib
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence

ROOT = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))  # rfviz from this checkout, when run as ``python classroom.py``

from rfviz.server import processes  # noqa: E402 (standard library only: loads no numpy, torch or streamlit)

COOKIE = "rfviz_server"
MEMORY_PER_PROCESS = 600 * 2**20
"""Resident memory one app server may reach with a class on it (measured ≈ 300–450 MiB, bench/README.md)."""
MAX_PROCESSES = 32
START_SECONDS = 120.0
"""What one app server may take to start on an idle machine (the allowance grows with the load)."""
FOLDER_PREFIX = "rfviz-classroom-"
LAUNCHER_FILE = "launcher"
"""In the private directory: the launcher's pid and start time, so that a later start can tell it is gone."""
WORKER_USER = "nobody"
"""The user nginx's worker runs as when the launcher is root."""

NGINX_CONF = """\
daemon off;
master_process on;
{user}worker_processes 1;
pid {tmp}/nginx.pid;
error_log {tmp}/nginx-error.log warn;
events {{ worker_connections 1024; }}
http {{
    access_log off;
    client_body_temp_path {work}/body;
    proxy_temp_path {work}/proxy;
    fastcgi_temp_path {work}/fastcgi;
    uwsgi_temp_path {work}/uwsgi;
    scgi_temp_path {work}/scgi;
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
            proxy_request_buffering off;
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
    check_port(args.address, args.port)
    return nginx


def check_port(address: str, port: int) -> None:
    """Refuse an ``address``:``port`` something listens on. The probe binds with SO_REUSEADDR, as nginx does: the
    sockets of a room stopped a moment ago (TIME_WAIT) do not block a restart, a listening socket does."""
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    try:
        with socket.socket(family, socket.SOCK_STREAM) as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind((address, port))
    except OSError as exc:
        raise Refused(f"cannot listen on {address}:{port}: {exc.strerror or exc}") from None


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


# ------------------------------------------------------------------ the address to share
def lan_address() -> str:
    """This machine's address on its network, found without sending anything: a UDP socket ``connect`` to a
    private address only picks the route and the source address. Falls back to the host name when there is no
    route (no network)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect(("10.254.254.254", 9))
            address = s.getsockname()[0]
        except OSError:
            address = ""
    if address and not ipaddress.ip_address(address).is_loopback and not ipaddress.ip_address(address).is_unspecified:
        return address
    return socket.gethostname()


def share(address: str, port: int) -> tuple[str, str]:
    """(the URL to print, who can open it) for nginx listening on ``address``:``port``."""
    try:
        ip = ipaddress.ip_address("127.0.0.1" if address.lower() == "localhost" else address)
    except ValueError:  # a host name
        return f"http://{address}:{port}", f"machines that resolve and reach {address}"
    if ip.is_unspecified:
        return (f"http://{lan_address()}:{port}",
                f"any machine that reaches this one on port {port}, e.g. the room's laptops on its network")
    host = f"[{address}]" if ip.version == 6 else address
    if ip.is_loopback:
        return f"http://{host}:{port}", "this machine only: --address 0.0.0.0 for the room's laptops"
    return f"http://{host}:{port}", f"machines that reach {address}"


def _local_url(address: str, port: int) -> str:
    """Where the launcher itself checks nginx's health."""
    if address in ("0.0.0.0", ""):
        return f"http://127.0.0.1:{port}"
    if address == "::":
        return f"http://[::1]:{port}"
    return f"http://[{address}]:{port}" if ":" in address else f"http://{address}:{port}"


# ------------------------------------------------------------------ the private directory
def _start_time(pid: int) -> str | None:
    """The kernel's start time of process ``pid`` (field 22 of /proc/PID/stat), None when there is none."""
    try:
        return pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def remove_stale_folders(parent: pathlib.Path | None = None) -> list[pathlib.Path]:
    """Remove the private directories of earlier launchers of this user that are no longer running (their
    ``launcher`` file names a pid that is gone or has another start time); return them."""
    parent = pathlib.Path(parent or tempfile.gettempdir())
    removed = []
    for folder in parent.glob(FOLDER_PREFIX + "*"):
        try:
            if folder.is_symlink() or folder.stat().st_uid != os.geteuid():
                continue
            pid, started = (folder / LAUNCHER_FILE).read_text().split()
        except (OSError, ValueError):
            continue
        if _start_time(int(pid)) != started:
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(folder)
    return removed


def make_folder() -> pathlib.Path:
    """The launcher's private directory (0700), with its pid and start time written in it."""
    tmp = pathlib.Path(tempfile.mkdtemp(prefix=FOLDER_PREFIX))
    (tmp / LAUNCHER_FILE).touch(mode=0o600)
    (tmp / LAUNCHER_FILE).write_text(f"{os.getpid()} {_start_time(os.getpid())}\n")
    return tmp


def worker_user() -> tuple[str, str, int, int] | None:
    """(user, group, uid, gid) for nginx's worker when the launcher is root (nginx would switch to ``nobody``
    anyway), None otherwise (the worker stays the launcher's user)."""
    if os.geteuid() != 0:
        return None
    import grp
    import pwd

    try:
        pw = pwd.getpwnam(WORKER_USER)
        return pw.pw_name, grp.getgrgid(pw.pw_gid).gr_name, pw.pw_uid, pw.pw_gid
    except KeyError:
        return None  # no such user: nginx keeps root's worker, which can write the directory


# ------------------------------------------------------------------ starting the processes
def start_servers(count: int, tmp: pathlib.Path, extra: Sequence[str], reaper: processes.Reaper | None = None,
                  started: list[subprocess.Popen] | None = None,
                  room: dict[str, str] | None = None) -> list[tuple[int, subprocess.Popen]]:
    """``count`` Streamlit servers of app.py on loopback ports, each logging to ``tmp``/server-<port>.log, each in
    a process group of its own that dies with the launcher (and is watched by ``reaper``), with the room's
    environment (``room_environment``) added to theirs; each is appended to ``started`` as soon as it runs (a
    signal in between leaves none unknown)."""
    workers = str(max(1, (os.cpu_count() or 2) // 2 // count))
    env = {"RFVIZ_MC_WORKERS": workers, **os.environ, **(room or {}), "PYTHONPATH": os.pathsep.join(
        p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)}
    servers = []
    for _ in range(count):
        port = free_port()
        (tmp / f"server-{port}.log").touch(mode=0o600)  # the launcher's own: the folder may be 0711 (see start_nginx)
        proc = processes.spawn([sys.executable, "-m", "streamlit", "run", str(ROOT / "app.py"),
                                "--server.headless", "true", "--server.address", "127.0.0.1", "--server.port",
                                str(port), "--browser.gatherUsageStats", "false", *extra],
                               cwd=ROOT, env=env, log=tmp / f"server-{port}.log")
        if started is not None:
            started.append(proc)
        if reaper is not None:
            reaper.watch(proc)
        servers.append((port, proc))
    return servers


def room_environment(tmp: pathlib.Path) -> dict[str, str]:
    """The room's store, created in the private folder ``tmp`` (removed with the room), and a fresh teacher's key:
    the environment every app process of the room gets (``RFVIZ_CLASSROOM_DB``, ``RFVIZ_TEACHER_KEY``)."""
    from rfviz.server.room import ENV_DB, ENV_KEY, Room, new_key

    path = tmp / "room.sqlite3"
    Room(path)  # the file and its tables, private to this user, before any app process opens it
    return {ENV_DB: str(path), ENV_KEY: new_key()}


def nginx_conf(tmp: pathlib.Path, ports: Sequence[int], address: str, port: int,
               user: tuple[str, str, int, int] | None = None) -> str:
    """nginx's configuration: ``ports`` behind ``address``:``port``, sticky by cookie, in the foreground with its
    master process (the launcher watches the master; the reaper kills the whole group), its worker as ``user``."""
    from rfviz import data
    from rfviz.compute import sweep_files

    upload_mib = max(data.MAX_FILE_BYTES, sweep_files.MAX_BYTES) // 2**20 + 1
    servers = "\n".join(f"        server 127.0.0.1:{p} max_fails=0;" for p in ports)
    listen = f"[{address}]" if ":" in address else address
    return NGINX_CONF.format(tmp=tmp, work=tmp / "worker", upload_mib=upload_mib, cookie=COOKIE, servers=servers,
                             address=listen, port=port, user=f"user {user[0]} {user[1]};\n" if user else "")


def start_nginx(nginx: str, tmp: pathlib.Path, ports: Sequence[int], address: str, port: int) -> subprocess.Popen:
    """nginx in the foreground, its files in ``tmp``; its worker's temporary files in ``tmp``/worker, owned by the
    worker's user (``nobody`` when the launcher is root: ``tmp`` is then 0711, so it can reach them)."""
    user = worker_user()
    work = tmp / "worker"
    for sub in ("body", "proxy", "fastcgi", "uwsgi", "scgi"):
        (work / sub).mkdir(parents=True, mode=0o700)
    if user is not None:
        for path in (work, *work.iterdir()):
            os.chown(path, user[2], user[3])
        os.chmod(tmp, 0o711)  # the worker may pass through, not list
    for name in ("nginx.conf", "nginx-error.log"):  # read and opened by the master (the launcher's user) only
        (tmp / name).touch(mode=0o600)
    (tmp / "nginx.conf").write_text(nginx_conf(tmp, ports, address, port, user))
    return processes.spawn([nginx, "-p", str(tmp), "-e", str(tmp / "nginx-error.log"), "-c",
                            str(tmp / "nginx.conf")], log=tmp / "nginx-error.log")


def serve(args: argparse.Namespace, nginx: str, tmp: pathlib.Path, reaper: processes.Reaper | None = None) -> int:
    """Start everything, print the address, watch until a signal (130 for Ctrl-C, 0 for SIGTERM) or a process
    stopping on its own (1, with its log's end)."""
    procs: list[subprocess.Popen] = []
    room = room_environment(tmp)
    try:
        servers = start_servers(args.processes, tmp, args.streamlit, reaper, procs, room)
        logs = {p: (f"app server on port {port}", tmp / f"server-{port}.log") for port, p in servers}
        allowance = processes.start_allowance(START_SECONDS, cap_s=600.0)
        for port, p in servers:
            processes.wait_for_health(f"http://127.0.0.1:{port}", p, what=logs[p][0], seconds=allowance,
                                      log=logs[p][1], also=procs)
        front = start_nginx(nginx, tmp, [port for port, _ in servers], args.address, args.port)
        procs.append(front)
        if reaper is not None:
            reaper.watch(front)
        logs[front] = ("nginx", tmp / "nginx-error.log")
        processes.wait_for_health(_local_url(args.address, args.port), front, what="nginx", seconds=30,
                                  log=logs[front][1], also=procs)
        url, who = share(args.address, args.port)
        plural = "es" if args.processes > 1 else ""
        print(f"rfviz classroom: {url} (who can open it: {who}; {args.processes} app process{plural} behind nginx; "
              f"Ctrl-C stops them)", flush=True)
        print(f"  students: {url}/learn\n  teacher:  {url}/teach?key={room['RFVIZ_TEACHER_KEY']}  (keep this link to "
              f"yourself)", flush=True)
        while True:
            ended = next((p for p in procs if p.poll() is not None), None)
            if ended is not None:
                name, log = logs[ended]
                print(f"classroom: the {name} stopped (exit {ended.returncode}):\n{_last_lines(log)}",
                      file=sys.stderr)
                return 1
            time.sleep(0.5)
    except processes.StartupError as exc:
        print(f"classroom: {exc}\n{_last_lines(None, exc.output)}", file=sys.stderr)
        return 1
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):  # a second signal must not leave a process
            signal.signal(sig, signal.SIG_IGN)
        processes.stop_groups(procs)


def _last_lines(path: pathlib.Path | None, text: str | None = None, lines: int = 15) -> str:
    text = processes.tail(path) if text is None else text
    return "\n".join(text.splitlines()[-lines:])


def _exit_with(code: int):
    def handler(signum: int, frame: object) -> None:
        raise SystemExit(code)
    return handler


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        nginx = check(args)
    except Refused as exc:
        print(f"classroom: {exc}", file=sys.stderr)
        return 2
    # explicitly: a job started in the background by a script begins with SIGINT ignored
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, _exit_with(0))
    signal.signal(signal.SIGHUP, _exit_with(129))
    remove_stale_folders()
    tmp = make_folder()
    reaper = processes.Reaper(tmp)  # first: whatever starts next is reaped if the launcher is killed
    try:
        return serve(args, nginx, tmp, reaper)
    except KeyboardInterrupt:
        return 130
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, signal.SIG_IGN)
        shutil.rmtree(tmp, ignore_errors=True)
        reaper.release()


if __name__ == "__main__":
    sys.exit(main())
