"""Resumable sweep output: rows appended per finished point, a JSON manifest, one consolidated file at the end.

* ``OUT.csv``: each finished point is appended as one CSV line and flushed to disk at once (fsync); on resume a
  torn last line is dropped. At the end the rows are rewritten sorted by point (atomic replace).
* ``OUT.parquet``: rows are buffered and written as Parquet part files under ``OUT.parquet.parts/`` (at least
  every ``flush_s`` seconds and on exit); the manifest lists the parts, so a part is counted only once it is
  completely written. At the end the parts are consolidated into ``OUT.parquet`` (sorted by point).
* ``OUT.manifest.json`` holds the sweep's specification (estimator, fixed values, grid, trials, seed, blocks,
  device) and a status; ``--resume`` refuses a manifest written by a different specification.
"""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import time
from pathlib import Path
from typing import Any

from ..params import ParameterError
from .tasks import SweepSpec

FORMAT = "rfviz-sweep/1"
_FLOAT_COLUMNS = ("kernel_value", "mse", "mc_mse", "stderr", "z", "log10_mse", "log10_mc_mse", "mc_mean",
                  "top_share", "seconds")
_INT_COLUMNS = ("point", "trials", "seed")
_STR_COLUMNS = ("estimator", "warning", "device", "backend")


def _atomic_write(path: Path, data: bytes) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


class ResultStore:
    """Append-only store of finished points for one sweep (CSV or Parquet, chosen by the file suffix)."""

    def __init__(self, path: str | os.PathLike[str], spec: SweepSpec, *, resume: bool = False,
                 overwrite: bool = False, flush_s: float = 10.0) -> None:
        self.path = Path(path)
        self.kind = self.path.suffix.lower().lstrip(".")
        if self.kind not in ("csv", "parquet"):
            raise ParameterError(f"out must end in .csv or .parquet, got {str(self.path)!r}")
        self.spec = spec
        self.manifest_path = self.path.with_name(self.path.name + ".manifest.json")
        self.parts_dir = self.path.with_name(self.path.name + ".parts")
        self.flush_s = flush_s
        self._buffer: list[dict[str, Any]] = []
        self._last_flush = time.monotonic()
        self.done: set[int] = set()
        self.manifest: dict[str, Any] = {}
        if resume:
            self._open_resume()
        else:
            existing = [p for p in (self.path, self.manifest_path, self.parts_dir) if p.exists()]
            if existing and not overwrite:
                raise ParameterError(f"out {str(self.path)!r} already exists ({existing[0].name}); pass --resume to "
                                     f"continue that sweep or --overwrite to replace it")
            for p in existing:
                shutil.rmtree(p) if p.is_dir() else p.unlink()
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.manifest = {"format": FORMAT, "spec": self._spec_json(), "status": "running", "parts": [],
                             "created": time.strftime("%Y-%m-%dT%H:%M:%S")}
            self._save_manifest()

    # ------------------------------------------------------------ manifest
    def _spec_json(self) -> dict[str, Any]:
        return json.loads(json.dumps(self.spec.to_json()))

    def _save_manifest(self) -> None:
        self.manifest["updated"] = time.strftime("%Y-%m-%dT%H:%M:%S")
        self.manifest["done_points"] = len(self.done)
        _atomic_write(self.manifest_path, json.dumps(self.manifest, indent=1).encode())

    def _open_resume(self) -> None:
        if not self.manifest_path.exists():
            raise ParameterError(f"--resume: no sweep to resume at {str(self.path)!r} (missing "
                                 f"{self.manifest_path.name})")
        self.manifest = json.loads(self.manifest_path.read_text())
        old, new = self.manifest.get("spec", {}), self._spec_json()
        if old != new:
            diff = sorted(k for k in set(old) | set(new) if old.get(k) != new.get(k))
            raise ParameterError(f"--resume: {self.manifest_path.name} was written by a different sweep "
                                 f"({', '.join(diff)} differ); use a new --out or the same arguments")
        if self.kind == "csv":
            self._recover_csv()
        elif self.manifest.get("status") == "complete":
            import pyarrow.parquet as pq

            self.done = {int(p) for p in pq.read_table(self.path, columns=["point"]).column("point").to_pylist()}
        else:
            import pyarrow.parquet as pq

            for part in self.manifest.get("parts", []):
                table = pq.read_table(self.parts_dir / part, columns=["point"])
                self.done.update(int(p) for p in table.column("point").to_pylist())
        if self.manifest.get("status") != "complete":
            self.manifest["status"] = "running"
        self._save_manifest()

    def _recover_csv(self) -> None:
        if not self.path.exists():
            return
        data = self.path.read_bytes()
        cut = data.rfind(b"\n") + 1
        if cut < len(data):  # a torn last line from a crash: drop it
            with open(self.path, "r+b") as f:
                f.truncate(cut)
            data = data[:cut]
        reader = csv.DictReader(io.StringIO(data.decode()))
        self.done = {int(row["point"]) for row in reader}

    @property
    def complete(self) -> bool:
        return self.manifest.get("status") == "complete"

    # --------------------------------------------------------------- rows
    def append(self, row: dict[str, Any]) -> None:
        """Record one finished point (durable at once for CSV; within ``flush_s`` for Parquet)."""
        self.done.add(int(row["point"]))
        if self.kind == "csv":
            new = not self.path.exists() or self.path.stat().st_size == 0
            with open(self.path, "a", newline="") as f:
                writer = csv.DictWriter(f, fieldnames=list(row))
                if new:
                    writer.writeheader()
                writer.writerow({k: "" if v is None else v for k, v in row.items()})
                f.flush()
                os.fsync(f.fileno())
            return
        self._buffer.append(row)
        if time.monotonic() - self._last_flush >= self.flush_s:
            self.flush()

    def _schema(self, row: dict[str, Any]) -> Any:
        import pyarrow as pa

        fields = []
        for key, value in row.items():
            if key in _FLOAT_COLUMNS:
                t = pa.float64()
            elif key in _INT_COLUMNS:
                t = pa.int64()
            elif key in _STR_COLUMNS:
                t = pa.string()
            elif key in ("reliable", "disagrees"):
                t = pa.bool_()
            else:  # a grid axis: its values share one type
                t = pa.int64() if isinstance(value, int) else pa.float64() if isinstance(value, float) else pa.string()
            fields.append(pa.field(key, t))
        return pa.schema(fields)

    def flush(self) -> None:
        """Write buffered Parquet rows as a new part file and list it in the manifest (no-op for CSV)."""
        self._last_flush = time.monotonic()
        if self.kind == "csv" or not self._buffer:
            return
        import pyarrow as pa
        import pyarrow.parquet as pq

        self.parts_dir.mkdir(exist_ok=True)
        name = f"part-{len(self.manifest['parts']):06d}-{os.getpid()}.parquet"
        rows = [{k: (str(v) if k not in _FLOAT_COLUMNS and isinstance(v, complex) else v) for k, v in r.items()}
                for r in self._buffer]
        table = pa.Table.from_pylist(rows, schema=self._schema(rows[0]))
        tmp = self.parts_dir / (name + ".tmp")
        pq.write_table(table, tmp)
        os.replace(tmp, self.parts_dir / name)
        self.manifest["parts"].append(name)
        self._buffer.clear()
        self._save_manifest()

    def close(self, *, complete: bool) -> None:
        """Flush; when ``complete``, consolidate into the final file sorted by point, else mark interrupted."""
        self.flush()
        if not complete:
            self.manifest["status"] = "interrupted"
            self._save_manifest()
            return
        if not self.complete:
            if self.kind == "csv":
                self._consolidate_csv()
            else:
                self._consolidate_parquet()
        self.manifest["status"] = "complete"
        self.manifest["parts"] = []
        self._save_manifest()
        if self.kind == "parquet":
            shutil.rmtree(self.parts_dir, ignore_errors=True)

    def _consolidate_csv(self) -> None:
        if not self.path.exists():
            return
        lines = self.path.read_text().splitlines(keepends=True)
        header, body = lines[0], lines[1:]
        body.sort(key=lambda line: int(line.split(",", 1)[0]))
        _atomic_write(self.path, (header + "".join(body)).encode())

    def _consolidate_parquet(self) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        parts = [pq.read_table(self.parts_dir / p) for p in self.manifest.get("parts", [])]
        if not parts:
            return
        table = pa.concat_tables(parts).sort_by("point")
        tmp = self.path.with_name(self.path.name + ".tmp")
        pq.write_table(table, tmp)
        os.replace(tmp, self.path)
