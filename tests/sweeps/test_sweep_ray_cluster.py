"""A real two-node Ray cluster on this machine (issue 24 item 5, issue 20 "Ray edges"): a head (0 CPUs) and a worker
node (2 CPUs), each a `ray start --block` process of its own, with token authentication on, free ports, a private
temp dir, and a working directory and PYTHONPATH that do not contain the repository — the worker node cannot import
rfviz, so a sweep there works only because the Ray backend ships rfviz in its runtime_env. Also: a wrong token is
one line; `--backend ray` without `--address` beside a running head starts a private Ray. The cluster is always
torn down (its process groups, then any process naming its temp dir): other people's Rays on the machine are never
touched, the default port 6379 and /tmp/ray are never used."""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from sweep_helpers import rows

from rfviz import get_estimator
from rfviz.cli import main
from rfviz.sweeps import SweepSpec, make_backend, parse_grid, run_sweep

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]
SWEEP = ["sweep", "positive", "d=8", "theta=1.0", "--grid", "r=0.3:0.6:2", "m=4,8", "--trials", "2048", "--seed", "7",
         "--block-trials", "512", "--device", "cpu"]


def free_ports(n: int) -> list[int]:
    socks = [socket.socket() for _ in range(n)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def _kill_everything_under(root: Path, procs: list[subprocess.Popen]) -> None:
    for p in procs:  # `ray start --block` and what it started share its process group
        try:
            os.killpg(p.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + 3  # raylet and GCS do not always exit on SIGTERM: then SIGKILL
    while time.monotonic() < deadline and any(p.poll() is None for p in procs):
        time.sleep(0.2)
    for p in procs:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        p.wait(timeout=30)
    for pid in os.listdir("/proc"):  # stragglers: only processes whose command line names our private temp dir
        if pid.isdigit() and int(pid) != os.getpid():
            try:
                cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
            except OSError:
                continue
            if str(root).encode() in cmd:
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except ProcessLookupError:
                    pass


HIDE_INSTALLED_RFVIZ = '''"""Test cluster nodes: rfviz imports only from outside site-packages (Ray's runtime_env)."""
import importlib.machinery
import site
import sys

_SITE = {*site.getsitepackages(), site.getusersitepackages()}


class _HideInstalledRfviz:
    @classmethod
    def find_spec(cls, name, path=None, target=None):
        if name != "rfviz":
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, [p for p in sys.path if p not in _SITE])
        if spec is None:
            raise ModuleNotFoundError("No module named 'rfviz' (an installed copy is hidden on this node)", name=name)
        return spec


sys.meta_path.insert(0, _HideInstalledRfviz)
'''
"""The nodes' ``sitecustomize``: a pip-installed rfviz (editable or not) is not importable there, so the test
proves that the sweep works because the backend ships rfviz, also where the driver's venv has rfviz installed."""


def _answers(port: int) -> bool:
    """Whether something accepts a connection on 127.0.0.1:``port`` (within 1 s)."""
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    except OSError:
        return False
    return True


@pytest.fixture(scope="module")
def cluster():
    pytest.importorskip("ray")
    root = Path(tempfile.mkdtemp(prefix="rfc"))  # short: Ray's socket paths must stay < 108 bytes
    outside = root / "elsewhere"  # the nodes' (and drivers') working directory: no rfviz in it
    outside.mkdir()
    hide = root / "hide"  # an installed rfviz (CI's venv has it, editable) is hidden from the nodes' Pythons too
    hide.mkdir()
    (hide / "sitecustomize.py").write_text(HIDE_INSTALLED_RFVIZ)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "RAY_ADDRESS")}
    env.update(RAY_TMPDIR=str(root / "t"), RAY_AUTH_MODE="token", RAY_AUTH_TOKEN=secrets.token_hex(16),
               PYTHONPATH=str(hide))
    ray_cli = [sys.executable, "-m", "ray.scripts.scripts"]  # the `ray` command, whatever the venv's bin dir
    gcs, *ports = free_ports(13)
    procs: list[subprocess.Popen] = []

    def start(name: str, args: list[str], p: list[int]) -> None:
        node_ports = [f"--node-manager-port={p[0]}", f"--object-manager-port={p[1]}",
                      f"--dashboard-agent-listen-port={p[2]}", f"--dashboard-agent-grpc-port={p[3]}",
                      f"--metrics-export-port={p[4]}", f"--runtime-env-agent-port={p[5]}"]
        with open(root / f"{name}.log", "w") as log:
            procs.append(subprocess.Popen([*ray_cli, "start", *args, *node_ports, "--block"], cwd=outside, env=env,
                                          stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                          start_new_session=True))

    try:
        start("head", ["--head", f"--port={gcs}", "--num-cpus=0", "--include-dashboard=false"], ports[:6])
        address = f"127.0.0.1:{gcs}"
        deadline = time.monotonic() + 90
        # up: its GCS port answers and it has written the file by which a plain ray.init() finds it (written after
        # the port opens: seen missing under four busy processes)
        while not (_answers(gcs) and (root / "t" / "ray" / "ray_current_cluster").exists()):
            if procs[0].poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"the Ray head did not start: {(root / 'head.log').read_text()[-1500:]}")
            time.sleep(0.5)
        start("worker", [f"--address={address}", "--num-cpus=2"], ports[6:12])
        yield {"address": address, "env": env, "outside": outside, "root": root}
    finally:
        _kill_everything_under(root, procs)
        shutil.rmtree(root, ignore_errors=True)


PROBE = r"""
import json, sys, time, ray
ray.init(address=sys.argv[1], log_to_driver=False)
deadline = time.time() + 90
while ray.cluster_resources().get("CPU", 0) < 2 and time.time() < deadline:
    time.sleep(0.5)

@ray.remote(num_cpus=1)
def where():
    import os, sys
    try:
        import rfviz
        found = rfviz.__file__
    except ImportError as exc:
        found = f"{type(exc).__name__}: {exc}"
    return {"rfviz": found, "cwd": os.getcwd(), "node": ray.get_runtime_context().get_node_id()}

head = [n["NodeID"] for n in ray.nodes() if n["Alive"] and n["Resources"].get("CPU", 0) == 0]
print(json.dumps({"cpus": ray.cluster_resources().get("CPU", 0), "nodes": len([n for n in ray.nodes() if n["Alive"]]),
                  "head": head, "task": ray.get(where.remote())}))
"""


def test_a_two_node_cluster_without_rfviz_runs_the_sweep_with_rows_equal_to_local(cluster, tmp_path) -> None:
    env, outside = cluster["env"], cluster["outside"]
    probe = subprocess.run([sys.executable, "-c", PROBE, cluster["address"]], cwd=outside, env=env, timeout=150,
                           capture_output=True, text=True)
    assert probe.returncode == 0, probe.stderr[-2000:]
    seen = json.loads(probe.stdout.strip().splitlines()[-1])
    assert seen["nodes"] == 2 and seen["cpus"] == 2
    assert seen["task"]["node"] not in seen["head"]  # the head has no CPU: tasks run on the worker node
    assert seen["task"]["rfviz"].startswith("ModuleNotFoundError"), seen  # …whose Python cannot import rfviz
    assert str(ROOT) not in seen["task"]["cwd"]

    est = get_estimator("positive")
    spec = SweepSpec("positive", {"d": "8", "theta": "1.0"}, parse_grid(["r=0.3:0.6:2", "m=4,8"], est, {"d": "8"}),
                     trials=2048, seed=7, block_trials=512, device="cpu")
    run_sweep(spec, str(tmp_path / "local.csv"), make_backend("local"), progress=False)
    driver_env = {**env, "PYTHONPATH": str(ROOT)}  # the driver has rfviz; PYTHONPATH does not reach the workers
    done = subprocess.run([sys.executable, "-m", "rfviz", *SWEEP, "--backend", "ray", "--address", cluster["address"],
                           "--out", str(tmp_path / "ray.csv")], cwd=outside, env=driver_env, timeout=150,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    assert f"joined the Ray cluster at {cluster['address']}: 2 CPUs" in done.stderr
    assert "rfviz shipped to the workers" in done.stderr
    assert rows(tmp_path / "ray.csv") == rows(tmp_path / "local.csv")


def test_a_refused_token_is_one_line(cluster, tmp_path, capsys, monkeypatch) -> None:
    monkeypatch.setenv("RAY_AUTH_MODE", "token")
    monkeypatch.setenv("RAY_AUTH_TOKEN", "not-the-cluster-token")
    t0 = time.perf_counter()
    code = main([*SWEEP, "--backend", "ray", "--address", cluster["address"], "--out", str(tmp_path / "x.csv")])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "refused this process's authentication token" in err and "RAY_AUTH_TOKEN" in err, err
    assert time.perf_counter() - t0 < 30
    assert not (tmp_path / "x.csv").exists()


def test_backend_ray_without_address_beside_a_running_head_starts_a_private_ray(cluster, tmp_path, capsys,
                                                                                monkeypatch) -> None:
    import ray

    monkeypatch.setenv("RAY_TMPDIR", cluster["env"]["RAY_TMPDIR"])
    for key in ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN", "RAY_ADDRESS"):  # (Ray reads RAY_AUTH_MODE once, at import)
        monkeypatch.delenv(key, raising=False)
    # the situation of issue 20: a plain ray.init() here would find the running head (and refuse num_cpus)
    assert (Path(cluster["env"]["RAY_TMPDIR"]) / "ray" / "ray_current_cluster").exists()
    assert not ray.is_initialized()
    code = main([*SWEEP, "--backend", "ray", "--workers", "1", "--out", str(tmp_path / "p.csv")])
    err = capsys.readouterr().err
    assert code == 0, err
    assert "ray: started a private local Ray" in err and ": 1 CPUs" in err, err
    assert not ray.is_initialized()  # shut down again; the head is untouched
    run_sweep(SweepSpec("positive", {"d": "8", "theta": "1.0"},
                        parse_grid(["r=0.3:0.6:2", "m=4,8"], get_estimator("positive"), {"d": "8"}),
                        trials=2048, seed=7, block_trials=512, device="cpu"),
              str(tmp_path / "local.csv"), make_backend("local"), progress=False)
    assert rows(tmp_path / "p.csv") == rows(tmp_path / "local.csv")
