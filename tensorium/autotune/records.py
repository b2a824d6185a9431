"""The tuning records database: one JSON-lines file of measurements that ``tensorium.compile`` reads.

The first line is a header naming the format and its version; every other line is one :class:`Record`:
a kernel's structural key, the target's key, a config, and the seconds of one trial (or why it
failed), with the candidate's features for training cost models. Records are only ever added: a write
copies the file with the new lines appended to a temporary file beside it and renames that over it, so a
crash leaves the old file or the new one, never half of one (under a lock file, so that processes adding
records at once keep each other's). A line that does not parse is reported (file
and line) and skipped, and kept in the file; a file of another format or version is reported and set
aside (renamed, never deleted) before a new one is started.

The database sits below ``tensorium.api`` (compile applies the best records) and imports nothing above
the lowering layer.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import statistics
import tempfile
import time
import warnings
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ..errors import TensoriumError
from ..ir.core import Operation
from ..lowering.space import Config, tunable_kernels
from ..paths import cache_dir
from ..targets import Target

FORMAT = "tensorium-tuning-records"
VERSION = 1
HEADER = {"format": FORMAT, "version": VERSION}


UNCONFIRMED = "not confirmed"
"""How the error of a verdict record begins: the search's winner, timed again against the default, did not
beat it clearly (:func:`tensorium.autotune.search.beats_default`). Such a config is set aside: compile never
applies it for that kernel and target."""


class TuningRecordsWarning(UserWarning):
    """A records file had lines or a version Tensorium could not use (they are reported, never used)."""


def default_db_path() -> Path:
    """``$TENSORIUM_TUNING_DB``, else ``tuning.jsonl`` in the cache folder (:func:`tensorium.paths.cache_dir`)."""
    explicit = os.environ.get("TENSORIUM_TUNING_DB")
    return Path(explicit) if explicit else cache_dir() / "tuning.jsonl"


@dataclass(frozen=True)
class Record:
    """One trial: ``kernel`` (structural key) on ``target`` (Target.key()) at ``config`` took ``seconds``
    (the fastest of the trial's repeats, or their median: :attr:`SearchOptions.statistic
    <tensorium.autotune.search.SearchOptions.statistic>`), or failed with ``error``."""

    kernel: str
    target: str
    config: str
    seconds: float | None
    error: str | None = None
    family: str = ""
    features: tuple[float, ...] = ()
    time: float = field(default_factory=time.time)

    @property
    def ok(self) -> bool:
        return self.seconds is not None

    @property
    def unconfirmed(self) -> bool:
        """Whether this is a verdict that set its config aside (see :data:`UNCONFIRMED`)."""
        return self.seconds is None and (self.error or "").startswith(UNCONFIRMED)

    def to_json(self) -> str:
        data = asdict(self)
        data["features"] = [round(f, 6) for f in self.features]
        return json.dumps(data, separators=(",", ":"))

    @staticmethod
    def from_json(data: object) -> Record:
        """The record of one parsed line; ValueError naming what is wrong."""
        if not isinstance(data, dict):
            raise ValueError("a record is a JSON object")
        try:
            kernel, target, config = str(data["kernel"]), str(data["target"]), str(data["config"])
        except KeyError as e:
            raise ValueError(f"missing field {e}") from None
        Config.parse(config)
        seconds = data.get("seconds")
        if seconds is not None and (not isinstance(seconds, (int, float)) or seconds <= 0):
            raise ValueError(f"seconds must be a positive number or null, got {seconds!r}")
        error = data.get("error")
        features = data.get("features") or []
        if not isinstance(features, list) or not all(isinstance(f, (int, float)) for f in features):
            raise ValueError("features must be a list of numbers")
        return Record(
            kernel,
            target,
            config,
            None if seconds is None else float(seconds),
            None if error is None else str(error),
            str(data.get("family", "")),
            tuple(float(f) for f in features),
            float(data.get("time", 0.0)),
        )


class TuningDB:
    """The records of one file (read when opened; :meth:`add` appends atomically)."""

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        self.path = Path(path) if path is not None else default_db_path()
        self.records: list[Record] = []
        self.problems: list[str] = []
        """``file:line: reason`` for each line that was skipped."""
        self.set_aside: Path | None = None
        """Where a foreign file was moved (None when the file was ours or absent)."""
        self._read()

    def __len__(self) -> int:
        return len(self.records)

    # reading ------------------------------------------------------------------------------------------
    def _read(self) -> None:
        if not self.path.exists():
            return
        try:
            text = self.path.read_text()
        except UnicodeDecodeError:  # not text at all: another program's file (an SQLite database, say)
            self._set_aside(None)
            return
        except OSError as e:
            raise TensoriumError(f"{self.path}: cannot read the tuning records: {e}") from None
        lines = text.splitlines()
        if not lines:
            return
        header = _json(lines[0])
        if not (isinstance(header, dict) and header.get("format") == FORMAT and header.get("version") == VERSION):
            self._set_aside(header)
            return
        for number, line in enumerate(lines[1:], start=2):
            if not line.strip():
                continue
            try:
                self.records.append(Record.from_json(json.loads(line)))
            except (ValueError, TensoriumError) as e:
                self.problems.append(f"{self.path}:{number}: {e}")
        if self.problems:
            shown = "\n  ".join(self.problems[:5])
            more = f"\n  ... and {len(self.problems) - 5} more" if len(self.problems) > 5 else ""
            warnings.warn(
                f"skipped {len(self.problems)} unreadable tuning record(s) (kept in the file):\n  {shown}{more}",
                TuningRecordsWarning,
                stacklevel=3,
            )

    def _set_aside(self, header: object) -> None:
        what = (
            f"version {header.get('version')} of {header.get('format')}"
            if isinstance(header, dict) and "format" in header
            else "not a Tensorium tuning records file"
        )
        aside = self.path.with_name(self.path.name + ".foreign")
        n = 1
        while aside.exists():
            n += 1
            aside = self.path.with_name(f"{self.path.name}.foreign{n}")
        os.replace(self.path, aside)
        self.set_aside = aside
        warnings.warn(
            f"{self.path}: {what} (this Tensorium reads version {VERSION}); moved it to {aside} and started a "
            "new records file",
            TuningRecordsWarning,
            stacklevel=3,
        )

    # queries ------------------------------------------------------------------------------------------
    def of(self, kernel: str, target: str) -> list[Record]:
        """The records of one kernel on one target, oldest first."""
        return [r for r in self.records if r.kernel == kernel and r.target == target]

    def best(self, kernel: str, target: str, excluding: Iterable[str] = ()) -> tuple[Config, float] | None:
        """The config with the lowest median time over its successful trials, with that time, among the
        confirmed configs: those measured more than once (a search times its winner and the default again
        before it ends) and not set aside by a verdict (:data:`UNCONFIRMED`) nor named in ``excluding``
        (config texts). Where no config was measured twice (records from random sampling, or older
        files), among all configs not set aside."""
        times: dict[str, list[float]] = {}
        set_aside: set[str] = set(excluding)
        for r in self.of(kernel, target):
            if r.seconds is not None:
                times.setdefault(r.config, []).append(r.seconds)
            elif r.unconfirmed:
                set_aside.add(r.config)
        times = {c: t for c, t in times.items() if c not in set_aside}
        pool = {c: t for c, t in times.items() if len(t) > 1} or times
        if not pool:
            return None
        config, runs = min(pool.items(), key=lambda item: (statistics.median(item[1]), item[0]))
        return Config.parse(config), statistics.median(runs)

    def targets(self) -> set[str]:
        """The target keys that have records."""
        return {r.target for r in self.records}

    def schedules(self, module: Operation, target: Target) -> dict[str, Config]:
        """The best recorded config of each tunable kernel of ``module`` on ``target`` (what compile applies);
        records whose config is no longer a legal point of the kernel's space are left out."""
        if target.key() not in self.targets():
            return {}
        found: dict[str, Config] = {}
        for kernel in tunable_kernels(module, target):
            best = self.best(kernel.key, target.key())
            if best is None:
                continue
            try:
                found[kernel.key] = kernel.space.check(best[0])
            except TensoriumError:
                continue
        return found

    def fingerprint(self, target: Target) -> str:
        """A short digest of this target's successful records and verdicts (part of compile's cache key: a
        verdict alone can change the point compile applies)."""
        mine = sorted(
            f"{r.kernel} {r.config} {r.seconds if r.ok else 'set aside'}"
            for r in self.records
            if r.target == target.key() and (r.ok or r.unconfirmed)
        )
        return hashlib.sha256("\n".join(mine).encode()).hexdigest()[:16] if mine else ""

    # writing ------------------------------------------------------------------------------------------
    def add(self, records: Iterable[Record]) -> None:
        """Append ``records`` to the file (atomically: the old contents, unreadable lines included, are kept)."""
        new = list(records)
        if not new:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with _locked(self.path):
            self._append(new)
        self.records += new

    def _append(self, new: list[Record]) -> None:
        old = self.path.read_text() if self.path.exists() else ""
        if old and not old.endswith("\n"):
            old += "\n"
        if not old:
            old = json.dumps(HEADER) + "\n"
        body = old + "".join(r.to_json() + "\n" for r in new)
        handle, temporary = tempfile.mkstemp(prefix=f".{self.path.name}.", dir=self.path.parent)
        try:
            with os.fdopen(handle, "w") as f:
                f.write(body)
                f.flush()
                os.fsync(f.fileno())
            os.replace(temporary, self.path)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise

    def merge(self, other: TuningDB) -> int:
        """Add the records of ``other`` that this database lacks; how many were added."""
        seen = {r.to_json() for r in self.records}
        fresh = [r for r in other.records if r.to_json() not in seen]
        self.add(fresh)
        return len(fresh)


def open_db(db: TuningDB | str | os.PathLike[str] | bool | None) -> TuningDB | None:
    """The database ``compile(tuning_db=...)`` names: a TuningDB, a path, None or True (the default file),
    or False (none)."""
    if db is False:
        return None
    if isinstance(db, TuningDB):
        return db
    if db is None or db is True:
        return TuningDB()
    if isinstance(db, (str, os.PathLike)):
        return TuningDB(db)
    raise TensoriumError(f"tuning_db= must be a path, True, False or None, got {type(db).__name__}")


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``path``'s lock file (beside it), so that processes add records in turn."""
    with open(path.with_name(f".{path.name}.lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _json(line: str) -> object:
    try:
        return json.loads(line)
    except ValueError:
        return None
