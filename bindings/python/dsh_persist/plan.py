"""``PlanMode``: the plan-mode controller (the ``dsh_plan_*`` functions)."""

from __future__ import annotations

import ctypes
from typing import Any, Dict, List, Union

from . import _lib
from ._handle import Handle
from ._lib import call_owned_text, check_bool, encode_json, encode_text, lib, loads, required
from .session import Session


def _free_plan(ptr: Any) -> None:
    lib.dsh_plan_free(ptr)


class PlanMode(Handle):
    """Plan-mode controller configured with ``{"section": text}``.

    State is folded from each session's log; the controller only keeps, per
    session, the pending selection. Every method takes the live
    :class:`Session` it acts on. Thread-safe.
    """

    _kind = "plan controller"

    def __init__(self, config: Union[Dict[str, Any], str]) -> None:
        """A controller whose system-prompt section is ``config["section"]``
        (a dict or its JSON text)."""
        raw = encode_json(config, "config", (dict,))
        out = _lib.plan_p()
        lib.dsh_plan_new(raw, ctypes.byref(out))
        super().__init__(out, _free_plan)

    def _call(self, fn: Any, session: Session, *args: Any) -> str:
        if not isinstance(session, Session):
            raise TypeError(f"session must be a Session, not {type(session).__name__}")
        with self._use() as plan, session._use() as sess:
            return required(call_owned_text(fn, plan, sess, *args), fn)

    def get(self, session: Session) -> Dict[str, Any]:
        """Plan mode's state for ``session``: ``{"active": bool, "pending"?: bool}``
        (``pending``: the target of a switch queued while a turn is open, present
        only then)."""
        return loads(self._call(lib.dsh_plan_get, session))

    def set(self, session: Session, active: bool) -> Dict[str, Any]:
        """Switches plan mode on or off for ``session``: logged at once, or queued
        while a turn is open and applied by :meth:`pre_step`. Returns
        ``{"outcome": "committed"|"queued"|"cancelled"|"noop", "narration"?: message}``."""
        return loads(self._call(lib.dsh_plan_set, session, check_bool(active, "active")))

    def pre_step(self, session: Session) -> Dict[str, Any]:
        """Call when a step is accepted: applies a queued switch to ``session``;
        ``{"appended": bool, "narration"?: message}``."""
        return loads(self._call(lib.dsh_plan_pre_step, session))

    def section(self, session: Session) -> str:
        """The configured system-prompt section when plan mode is (about to be)
        active for ``session``, else ``""``."""
        return self._call(lib.dsh_plan_section, session)

    def command(self, session: Session, raw_input: str, has_attachments: bool = False) -> Dict[str, Any]:
        """Runs the ``/plan`` command typed by the user (``raw_input`` is the
        text after ``/plan``: ``off``, or a message to start planning with):
        ``{"kind": "success"|"error", "text": …, "steer"?: …}``."""
        raw = encode_text(raw_input, "raw_input")
        return loads(self._call(lib.dsh_plan_command, session, raw, check_bool(has_attachments, "has_attachments")))

    def exit_check(self, session: Session, plan_markdown: str) -> Dict[str, Any]:
        """Checks an ``exit_plan_mode`` tool call carrying ``plan_markdown``:
        ``{"ok": true, "review": …}`` (show the review to the user) or
        ``{"ok": false, "error": …}``."""
        return loads(self._call(lib.dsh_plan_exit_check, session, encode_text(plan_markdown, "plan_markdown")))

    def exit_answer(self, session: Session, answer: Union[Dict[str, Any], str]) -> Dict[str, Any]:
        """Applies the user's answer to the review of :meth:`exit_check`, e.g. ``{"answers": [{"id": "plan-review",
        "selected": ["Approve"]}]}`` → ``{"approved": true}`` or
        ``{"approved": false, "error": …}``."""
        return loads(self._call(lib.dsh_plan_exit_answer, session, encode_json(answer, "answer", (dict,))))

    @staticmethod
    def project(events: Union[List[Any], str]) -> Dict[str, Any]:
        """Plan mode's state folded from a list of events (or its JSON text),
        without a session, for UIs: ``{"active": bool, "pending": bool|None}``."""
        raw = encode_json(events, "events", (list, tuple))
        return loads(required(call_owned_text(lib.dsh_plan_project, raw), lib.dsh_plan_project))

    def __repr__(self) -> str:
        """``<dsh_persist.PlanMode open>`` or ``<dsh_persist.PlanMode closed>``."""
        return f"<dsh_persist.PlanMode {'closed' if self.closed else 'open'}>"


__all__ = ["PlanMode"]
