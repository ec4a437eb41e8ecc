"""An idle ``./run app`` must not burn CPU watching its own environment (issue 29).

The app is started as the README says (``./run app``) from a copy of the repository with its ``.venv`` inside (a
real virtual environment: the test's Python behind a ``pyvenv.cfg``, the installed packages through a ``.pth``,
and 3 000 package directories of its own, as a real ``.venv`` has thousands), a browser session is opened (the
file watcher, when there is one, belongs to a session), another process imports every package of that ``.venv``
several times (each import opens files inside the clone), and the server's CPU time is read from /proc over a
window of a minute: it must stay under 2 % of one core. Whether a watcher on the ``.venv`` burns CPU depends on
the machine's load (the inotify queue overflows under load), so the test also counts the server's inotify watches:
a watcher on the clone holds one per directory of the ``.venv`` (thousands), none without it.
"""

from __future__ import annotations

import hashlib
import os
import pathlib
import shutil
import subprocess
import sys
import sysconfig
import time

import pytest
from proc_helpers import free_port, stop, wait_for_health

from rfviz.server.processes import spawn

ROOT = pathlib.Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"
FAKE_PACKAGES = 3000
WINDOW_S = 20.0
MAX_CORE_SHARE = 0.02

pytestmark = [pytest.mark.slow, pytest.mark.browser,
              pytest.mark.skipif(not os.path.exists(CHROMIUM), reason=f"Chromium is not installed at {CHROMIUM}"),
              pytest.mark.skipif(not os.path.exists("/proc/self/stat"), reason="reads CPU time from /proc")]


def _clone(dest: pathlib.Path) -> None:
    """The repository's tracked files (their working-tree contents) copied to ``dest``."""
    files = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True, timeout=60).stdout
    for name in filter(None, files.decode().split("\0")):
        src = ROOT / name
        if src.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / name)


def _venv_inside(clone: pathlib.Path) -> pathlib.Path:
    """``clone/.venv``: this test's interpreter as a virtual environment whose site-packages holds a ``.pth`` to
    the installed packages and to the clone (as ``pip install -e .`` would), plus ``FAKE_PACKAGES`` packages."""
    venv = clone / ".venv"
    site = venv / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" / "site-packages"
    (venv / "bin").mkdir(parents=True)
    site.mkdir(parents=True)
    (venv / "bin" / "python").symlink_to(os.path.realpath(sys.executable))
    (venv / "bin" / "python3").symlink_to("python")
    home = os.path.dirname(os.path.realpath(sys.executable))
    (venv / "pyvenv.cfg").write_text(f"home = {home}\ninclude-system-site-packages = false\n"
                                     f"version = {sys.version.split()[0]}\n")
    (venv / "bin" / "activate").write_text(f'export VIRTUAL_ENV="{venv}"\nexport PATH="{venv}/bin:$PATH"\n')
    (site / "rfviz-test.pth").write_text(f"{sysconfig.get_paths()['purelib']}\n{clone}\n")
    stamp = hashlib.sha256((clone / "requirements.txt").read_bytes() + (clone / "pyproject.toml").read_bytes())
    (venv / ".rfviz-installed").write_text(stamp.hexdigest()[:16] + "\n")  # ./run skips its pip install
    for i in range(FAKE_PACKAGES):
        pkg = site / f"fake_pkg_{i:04d}"
        pkg.mkdir()
        (pkg / "__init__.py").write_text(f"VALUE = {i}\n")
    return venv


def _cpu_seconds(pid: int) -> float:
    fields = pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def _inotify_watches(pid: int) -> int:
    """Directories (and files) the process watches with inotify: the ``inotify wd:`` lines of its inotify fds."""
    count = 0
    for fd in pathlib.Path(f"/proc/{pid}/fd").iterdir():
        try:
            if os.readlink(fd) == "anon_inode:inotify":
                info = (pathlib.Path(f"/proc/{pid}/fdinfo") / fd.name).read_text()
                count += sum(1 for line in info.splitlines() if line.startswith("inotify wd:"))
        except OSError:
            continue
    return count


def test_an_idle_run_app_does_not_watch_its_own_venv(tmp_path) -> None:
    from playwright.sync_api import sync_playwright

    clone = tmp_path / "clone"
    _clone(clone)
    venv = _venv_inside(clone)
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "RFVIZ_VENV")}
    env.update(OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    log = tmp_path / "run-app.log"
    server = spawn(["./run", "app", "--server.headless", "true", "--server.port", str(port), "--server.address",
                    "127.0.0.1"], cwd=clone, env=env, log=log)  # its own process group, dies with the test
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for_health(url, server, "./run app", log=log)  # the allowance grows with the load
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--headless"])
            try:
                page = browser.new_page()
                page.goto(url, wait_until="domcontentloaded", timeout=180_000)
                page.wait_for_selector('[data-testid="stApp"]', timeout=90_000)
                page.wait_for_timeout(5000)  # the first run ends; its session (and any watcher) stays
                importer = ("import importlib, sys\n"
                            f"for round in range(3):\n"
                            f"    for i in range({FAKE_PACKAGES}):\n"
                            "        sys.modules.pop(f'fake_pkg_{i:04d}', None)\n"
                            "        importlib.import_module(f'fake_pkg_{i:04d}')\n"
                            "    importlib.invalidate_caches()\n"
                            "import rfviz.cli\n")
                subprocess.run([str(venv / "bin" / "python"), "-B", "-c", importer], cwd=clone, env=env,
                               check=True, timeout=300)
                time.sleep(2.0)
                before, started = _cpu_seconds(server.pid), time.monotonic()
                time.sleep(WINDOW_S)
                used, wall = _cpu_seconds(server.pid) - before, time.monotonic() - started
                assert server.poll() is None
                watches = _inotify_watches(server.pid)  # deterministic, where the CPU depends on the load
                assert watches < 100, f"the server watches {watches} paths (its .venv has {FAKE_PACKAGES} packages)"
                assert used / wall < MAX_CORE_SHARE, f"idle server used {used:.2f} CPU-s in {wall:.0f} s"
            finally:
                browser.close()
    finally:
        stop(server)
