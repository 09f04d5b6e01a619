"""mypy --strict sees the installed package's types (py.typed)."""

from pathlib import Path

from dsh_persist import Session, Store

store: Store = Store.open({"backend": "sqlite", "path": Path("/tmp/never-opened.db")})
session: Session = store.start({"id": "typed"})
seq: int = session.append("turn/start", {"turn": 1})
