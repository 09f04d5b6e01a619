"""Plan mode through the wrapper: /plan, exit review (check + approve), the
pending exit committed by pre_step, projection, and config errors."""

import pytest

from dsh_persist import InvalidArgumentError, PlanMode
from conv import types

SECTION = "## Plan mode\nOnly read; propose a plan."


@pytest.fixture
def plan():
    p = PlanMode({"section": SECTION})
    yield p
    p.close()


def test_plan_command_and_exit_review(store, plan):
    with store.start({"id": "p"}) as s:
        assert plan.get(s) == {"active": False}
        assert plan.section(s) == ""
        assert plan.exit_check(s, "# Plan") == {"ok": False, "error": "exit_plan_mode is only available in plan mode"}

        # /plan with no open turn commits at once
        r = plan.command(s, "  ")
        assert r["kind"] == "success" and r["text"] == "Plan mode on. Use /plan off to leave."
        assert s.events()[-1] == {**s.events()[-1], "type": "plan/mode", "data": {"active": True}}
        assert plan.get(s) == {"active": True}
        assert plan.section(s) == SECTION

        s.append("turn/start", {"turn": 1})
        s.append("step/start", {"turn": 1, "step": 1})
        refused = plan.exit_check(s, "no heading here")
        assert refused == {
            "ok": False,
            "error": "exit_plan_mode requires a non-empty markdown plan starting with a # heading",
        }
        check = plan.exit_check(s, "# Plan\n- read the code\n- change it")
        assert check["ok"] is True
        question = check["review"]["questions"][0]
        assert question["id"] == "plan-review"
        assert question["detail"] == "# Plan\n- read the code\n- change it"
        assert [o["label"] for o in question["options"]] == ["Approve", "Keep planning"]

        keep = plan.exit_answer(s, {"answers": [{"id": "plan-review", "selected": ["Keep planning"], "custom": "more tests"}]})
        assert keep == {"approved": False, "error": "The user chose to keep planning; their feedback: more tests"}
        assert plan.exit_answer(s, {"dismissed": True})["approved"] is False
        with pytest.raises(InvalidArgumentError):
            plan.exit_answer(s, {"answers": "Approve"})

        approved = plan.exit_answer(s, '{"answers":[{"id":"plan-review","selected":["Approve"],"custom":null}]}')
        assert approved == {"approved": True}
        assert plan.get(s) == {"active": True, "pending": False}
        assert plan.section(s) == ""  # the pending target is inactive

        # the next accepted step commits the exit
        s.append("step/end", {"turn": 1, "step": 1})
        s.append("step/start", {"turn": 1, "step": 2})
        before = len(s.events())
        step = plan.pre_step(s)
        assert step["appended"] is True and "narration" not in step  # approval never narrates
        assert s.events(before)[0]["type"] == "plan/mode"
        assert s.events(before)[0]["data"] == {"active": False}
        assert plan.get(s) == {"active": False}
        assert plan.pre_step(s) == {"appended": False}

        # /plan while a turn is open queues; /plan off cancels the queued entry
        queued = plan.command(s, "look at the tests first")
        assert queued["text"] == "Entering plan mode (applies from the next step). Use /plan off to leave."
        assert queued["steer"]["content"][0]["text"] == "look at the tests first"
        assert plan.get(s) == {"active": False, "pending": True}
        assert plan.command(s, "off")["text"] == "Plan mode entry cancelled."
        assert plan.command(s, "off", True) == {"kind": "error", "text": "Image attachments cannot accompany /plan off."}
        s.append("step/end", {"turn": 1, "step": 2})
        s.append("turn/end", {"turn": 1, "reason": {"kind": "completed"}})
        assert plan.set(s, False) == {"outcome": "noop"}
        assert plan.set(s, True)["outcome"] == "committed"

        events = s.events()
        assert types(events).count("plan/mode") == 3
        assert PlanMode.project(events) == {"active": True, "pending": False}
        assert PlanMode.project(s.events_raw()) == {"active": True, "pending": False}


def test_plan_projection_of_a_running_command():
    events = [
        {"type": "command/run", "seq": 0, "time": 0, "data": {"commandId": "c1", "name": "plan", "args": "", "source": "user"}},
    ]
    assert PlanMode.project(events) == {"active": False, "pending": True}
    events.append({"type": "command/done", "seq": 1, "time": 0, "data": {"commandId": "c1", "kind": "success"}})
    events.append({"type": "plan/mode", "seq": 2, "time": 0, "data": {"active": True}})
    assert PlanMode.project(events) == {"active": True, "pending": False}


def test_plan_config_errors():
    with pytest.raises(InvalidArgumentError) as e:
        PlanMode({"section": "   "})
    assert e.value.message == "PlanModeConfig needs a non-empty `section`"
    with pytest.raises(InvalidArgumentError) as e:
        PlanMode({"section": "x", "extra": 1})
    assert "unknown key" in e.value.message
    with pytest.raises(InvalidArgumentError):
        PlanMode.project('{"not": "an array"}')
    with pytest.raises(TypeError):
        PlanMode(None)
