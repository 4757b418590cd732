"""The teacher cache: every answer a model teacher gave, kept on disk as it arrives.

One SQLite file in the run dir (``RUN_DIR/teacher_cache/answers.sqlite``), outside the
distill step's own directory, so a step that was killed, stopped at its failure share
or its token budget, or rerun after a plan change, asks the teacher only for what it
has not answered yet. A row is committed as soon as its answer is received (WAL mode,
one small transaction each), keyed by what decides the answer: the backend kind and
model, the sampling settings, the system prompt, the messages and the seed (for
backends that write a request's candidates in one call, also the candidate count and
the candidate's index). The endpoint's URL, the timeouts, the concurrency and the
retries are not part of the key: the same model asked the same thing answers the same.

Each row keeps the candidate's text and metadata as received, the reply's token usage
and how many attempts it took.

Example:
    >>> import tempfile
    >>> from pathlib import Path
    >>> cache = AnswerCache(Path(tempfile.mkdtemp()))
    >>> key = answer_key({"kind": "openai", "model": "m"}, "sys", ({"role": "user", "content": "hi"},), [7])
    >>> cache.get(key) is None
    True
    >>> cache.put(key, "openai", "hello", {"teacher": "openai"}, {"prompt_tokens": 3, "completion_tokens": 1}, 2)
    >>> cache.get(key).text, cache.get(key).usage["prompt_tokens"], len(cache)
    ('hello', 3, 1)
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runtime.distill.teachers.base import TeacherError

__all__ = ["AnswerCache", "CachedAnswer", "answer_key", "CACHE_DIR", "CACHE_FILE"]

CACHE_DIR = "teacher_cache"
CACHE_FILE = "answers.sqlite"
SCHEMA_VERSION = 1


def answer_key(sampling: dict[str, Any], system: str, messages: tuple[dict[str, str], ...], seed: list) -> str:
    """The cache key of one answer: sampling settings, the whole prompt, and its seed parts."""
    return hashlib.sha256(json.dumps([sampling, system, list(messages), seed], sort_keys=True,
                                     ensure_ascii=False).encode()).hexdigest()


@dataclass(frozen=True)
class CachedAnswer:
    text: str
    metadata: dict[str, Any]
    usage: dict[str, int]
    attempts: int


class AnswerCache:
    """Answers on disk, one committed row each; a killed run loses none it received."""

    def __init__(self, directory: Path):
        self.path = directory / CACHE_FILE
        self._lock = threading.Lock()
        try:
            directory.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None, timeout=30)
            version = self._db.execute("PRAGMA user_version").fetchone()[0]
            tables = {r[0] for r in self._db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            if version not in (0, SCHEMA_VERSION) or (version == 0 and tables):
                raise sqlite3.DatabaseError(f"schema version {version}, tables {sorted(tables)}; "
                                            f"this craft writes version {SCHEMA_VERSION}")
            self._db.execute("PRAGMA journal_mode=WAL")
            # A committed row survives the process being killed (not a power cut) and the
            # writes stay cheap: one answer is one small transaction.
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.execute("CREATE TABLE IF NOT EXISTS answers (key TEXT PRIMARY KEY, teacher TEXT, text TEXT, "
                             "metadata TEXT, prompt_tokens INTEGER, completion_tokens INTEGER, attempts INTEGER)")
            self._db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        except (sqlite3.DatabaseError, OSError) as err:
            raise TeacherError(
                f"teacher cache `{self.path}` cannot be used ({err}); it is left as it is. Move it aside "
                f"(`mv {self.path} {self.path}.bad`) and rerun: the answers it held are asked for again") from None

    def get(self, key: str) -> CachedAnswer | None:
        with self._lock:
            row = self._db.execute("SELECT text, metadata, prompt_tokens, completion_tokens, attempts FROM answers "
                                   "WHERE key = ?", (key,)).fetchone()
        if row is None:
            return None
        return CachedAnswer(row[0], json.loads(row[1]), {"prompt_tokens": row[2], "completion_tokens": row[3]},
                            row[4])

    def put(self, key: str, teacher: str, text: str, metadata: dict[str, Any], usage: dict[str, int],
            attempts: int) -> None:
        with self._lock:
            self._db.execute("INSERT OR REPLACE INTO answers VALUES (?, ?, ?, ?, ?, ?, ?)",
                             (key, teacher, text, json.dumps(metadata, sort_keys=True, default=str),
                              int(usage.get("prompt_tokens", 0)), int(usage.get("completion_tokens", 0)), attempts))

    def __len__(self) -> int:
        with self._lock:
            return self._db.execute("SELECT COUNT(*) FROM answers").fetchone()[0]

    def close(self) -> None:
        with self._lock:
            self._db.close()
