"""Host side: secret values never leave a job's result, even if a job got hold of one.

Job processes start from an allow-listed environment (`limits.JOB_ENVIRONMENT`), so
agent code cannot read the host's secrets. This is the second layer: the pool scans
everything a job sends back (result cells and column names, preview, stdout tail,
error text, API call names) for the values of the host's secret-looking environment
variables and replaces each with `[redacted:NAME]`, before any step stores it or
feeds it to a model. Only whole values are found: a job that prints half a key, or
one encoded, is not caught here; the allow-listed environment is what holds there.
"""

from __future__ import annotations

import os
import re
import threading
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import replace

import numpy
import pandas as pd

from .result import ExecResult, render_preview

__all__ = ["MIN_SECRET_CHARS", "SECRET_NAME", "Redactor", "secret_values"]

# Names of variables whose values are secret: API keys, tokens, passwords.
SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD", re.IGNORECASE)
# Shorter values (`1`, `true`, a port) would redact ordinary output.
MIN_SECRET_CHARS = 8


def secret_values(extra_names: Iterable[str] = (), environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """``name -> value`` of the variables whose values must not leave a job.

    Those whose names look secret (`SECRET_NAME`) and those named in `extra_names`
    (a recipe's `gate execution { secret_env ... }`), with values of at least
    `MIN_SECRET_CHARS` characters.

    Example:
        >>> secret_values(["DB_DSN"], {"OPENAI_API_KEY": "sk-0123456789", "DB_DSN": "pg://u:pw@db",
        ...                            "HOME": "/root", "GH_TOKEN": "x"})
        {'DB_DSN': 'pg://u:pw@db', 'OPENAI_API_KEY': 'sk-0123456789'}
    """
    environ = os.environ if environ is None else environ
    extra = set(extra_names)
    return {name: environ[name] for name in sorted(environ)
            if (name in extra or SECRET_NAME.search(name)) and len(environ[name]) >= MIN_SECRET_CHARS}


class Redactor:
    """Replaces secret values in job results; `counts` says how often, per variable.

    Example:
        >>> redactor = Redactor({"API_KEY": "sk-0123456789"})
        >>> redactor.text("key=sk-0123456789", Counter())
        'key=[redacted:API_KEY]'
    """

    def __init__(self, secrets: Mapping[str, str]):
        # Longest first: a value that contains another is replaced whole. One name per value.
        by_value = {value: name for name, value in sorted(secrets.items(), reverse=True)}
        self._secrets = sorted(by_value.items(), key=lambda item: (-len(item[0]), item[1]))
        self._encoded = [(value.encode(), name) for value, name in self._secrets]
        self._counts: Counter[str] = Counter()
        self._lock = threading.Lock()  # run_many reports from several threads

    @property
    def counts(self) -> dict[str, int]:
        """Occurrences redacted so far, per variable name."""
        with self._lock:
            return dict(sorted(self._counts.items()))

    def text(self, text: str, found: Counter) -> str:
        for value, name in self._secrets:
            if value in text:
                found[name] += text.count(value)
                text = text.replace(value, f"[redacted:{name}]")
        return text

    def _bytes(self, data: bytes, found: Counter) -> bytes:
        for value, name in self._encoded:
            if value in data:
                found[name] += data.count(value)
                data = data.replace(value, f"[redacted:{name}]".encode())
        return data

    def _value(self, value, found: Counter):
        """A cell of a result frame, recursing into the lists and dicts nested types become."""
        if isinstance(value, str):
            return self.text(value, found)
        if isinstance(value, bytes):
            return self._bytes(value, found)
        if isinstance(value, dict):
            return {self._value(k, found): self._value(v, found) for k, v in value.items()}
        if isinstance(value, (list, tuple, numpy.ndarray)):
            return [self._value(v, found) for v in value]
        return value

    def _frame(self, frame: pd.DataFrame, found: Counter) -> pd.DataFrame:
        frame = frame.copy()
        frame.columns = [self.text(str(c), found) for c in frame.columns]
        for position in range(frame.shape[1]):
            column = frame.iloc[:, position]
            if column.dtype == object or isinstance(column.dtype, (pd.CategoricalDtype, pd.StringDtype)):
                frame.isetitem(position, column.astype(object).map(lambda v: self._value(v, found)))
        return frame

    def result(self, result: ExecResult, payload: bytes = b"") -> ExecResult:
        """`result` with every secret value replaced; `payload` is the Arrow bytes its frame came from."""
        if not self._secrets:
            return result
        texts = [result.error_type or "", result.error_message or "", result.result_preview, result.stdout_tail,
                 *result.api_calls, *result.result_columns]
        in_frame = any(value in payload for value, _ in self._encoded)  # Arrow keeps strings as UTF-8
        if not in_frame and not any(value in text for value, _ in self._secrets for text in texts):
            return result
        found: Counter[str] = Counter()
        changes = {}
        if in_frame and result.result_frame is not None:
            frame = self._frame(result.result_frame, found)
            changes.update(result_frame=frame, result_columns=tuple(frame.columns),
                           result_preview=render_preview(frame, result.result_rows))
        changes.update(
            error_type=None if result.error_type is None else self.text(result.error_type, found),
            error_message=None if result.error_message is None else self.text(result.error_message, found),
            result_preview=self.text(changes.get("result_preview", result.result_preview), found),
            stdout_tail=self.text(result.stdout_tail, found),
            api_calls=tuple(self.text(call, found) for call in result.api_calls))
        with self._lock:
            self._counts.update(found)
        return replace(result, redacted=tuple(sorted(found)), **changes)
