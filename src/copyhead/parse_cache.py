"""The code index's parse of each module kept on disk (:class:`ParseCache`), so that each of a workflow's ~100
short processes does not parse the whole package again for its code fingerprint (about 1 s each;
:mod:`copyhead.fingerprint`). It stores and returns plain JSON per module; the fingerprint module turns it
into its own structures. Nothing here can change a number: an entry is only ever reused for the very same
input to the very same parser.
"""
from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path

# this file's own source is part of every key: a change to how entries are kept invalidates them all
_SELF_KEY = hashlib.sha256(Path(__file__).read_bytes()).hexdigest()[:16]


def cache_dir() -> Path:
    """Where parsed modules are kept between processes: ``$COPYHEAD_CACHE_DIR``, else
    ``$XDG_CACHE_HOME/copyhead``, else ``~/.cache/copyhead``."""
    if os.environ.get("COPYHEAD_CACHE_DIR"):
        return Path(os.environ["COPYHEAD_CACHE_DIR"])
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "copyhead"


class ParseCache:
    """The parses of one package state, one JSON file per state. An entry is keyed by the module's name, its
    bytes, the parser's key (``parser_key``: the parser's own source) and this file's source. An unreadable
    or unwritable cache is parsed around."""

    KEEP = 16       # package states kept on disk (older files are removed when a new one is written)

    def __init__(self, parser_key: str, entries: list[tuple[str, bytes, bool]]):
        h = hashlib.sha256(f"{parser_key}\0{_SELF_KEY}".encode())
        self.keys = {}
        for name, data, is_pkg in entries:
            k = hashlib.sha256(b"%s\0%d\0%s" % (name.encode(), is_pkg, data)).hexdigest()
            self.keys[name] = k
            h.update(k.encode())
        self.path = cache_dir() / "fingerprint" / f"{h.hexdigest()[:24]}.json"

    @staticmethod
    def _read(path: Path) -> dict | None:
        try:
            d = json.loads(path.read_text())
            return d if isinstance(d.get("keys"), dict) and isinstance(d.get("modules"), dict) else None
        except (OSError, ValueError, AttributeError):
            return None

    def load(self) -> tuple[dict[str, dict], bool]:
        """The cached parses whose key matches (all of them when this package state is on disk; else those
        unchanged since the newest state on disk), and whether that is every module."""
        d = self._read(self.path)
        if d is None:
            older = sorted(self.path.parent.glob("*.json"), key=lambda p: p.stat().st_mtime, reverse=True) \
                if self.path.parent.is_dir() else []
            d = self._read(older[0]) if older else None
        if d is None:
            return {}, False
        out = {n: d["modules"][n] for n, k in self.keys.items()
               if d["keys"].get(n) == k and isinstance(d["modules"].get(n), dict)}
        return out, len(out) == len(self.keys)

    def store(self, modules: dict[str, dict]) -> None:
        """Write this state's parses (atomically) and remove all but the newest :data:`KEEP` states."""
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.path.parent, suffix=".tmp")
            with os.fdopen(fd, "w") as f:
                json.dump({"keys": self.keys, "modules": modules}, f)
            os.replace(tmp, self.path)      # atomic: a concurrent reader sees the old file or the new one
            states = sorted(self.path.parent.glob("*.json"), key=lambda p: p.stat().st_mtime, reverse=True)
            for old in states[self.KEEP:]:
                old.unlink(missing_ok=True)
        except OSError:
            pass
