"""Conversation builders (the shapes of tests/support/conv.rs), shared with child processes."""

MODEL_SOURCE = {"kind": "model", "provider": "deepseek-official", "model": "deepseek-v4-flash"}


def user_message(mid, text):
    return {"id": mid, "role": "user", "content": [{"type": "text", "text": text}], "source": {"kind": "user"}}


def assistant_message(turn, step, mid, text, calls=()):
    content = [{"type": "text", "text": text}]
    content += [{"type": "tool-call", "id": c, "name": "bash", "arguments": {"command": "ls"}} for c in calls]
    return {
        "turn": turn,
        "step": step,
        "message": {"id": mid, "role": "assistant", "content": content, "source": MODEL_SOURCE},
    }


def tool_call(turn, step, call_id):
    return {"turn": turn, "step": step, "callId": call_id, "name": "bash", "arguments": {"command": "ls"}}


def tool_result(turn, step, call_id, text):
    return {
        "turn": turn,
        "step": step,
        "message": {
            "id": f"result-{call_id}",
            "role": "user",
            "content": [{"type": "tool-result", "toolCallId": call_id, "content": [{"type": "text", "text": text}]}],
            "source": {"kind": "tool", "callId": call_id},
        },
    }


def text_delta(turn, step, text):
    return {"turn": turn, "step": step, "chunk": {"type": "text-delta", "index": 0, "text": text}}


def open_turn_with_call(session, turn):
    """turn/start … assistant/message with a tool-call block, tool/call recorded; no result."""
    session.append("turn/start", {"turn": turn})
    session.append("user/message", user_message(f"u{turn}", f"question {turn}"), surface_op="append")
    session.append("step/start", {"turn": turn, "step": 1})
    for piece in ["Let", " me", " look", "."]:
        session.append("assistant/chunk", text_delta(turn, 1, piece))
    call = f"call-{turn}"
    session.append("assistant/message", assistant_message(turn, 1, f"a{turn}-1", "Let me look.", [call]), surface_op="append")
    return session.append("tool/call", tool_call(turn, 1, call))


def complete_turn(session, turn):
    """A whole turn with one tool round trip; returns the seq of its turn/end."""
    open_turn_with_call(session, turn)
    call = f"call-{turn}"
    session.append("tool/result", tool_result(turn, 1, call, "file.txt"), surface_op="append")
    session.append("step/end", {"turn": turn, "step": 1})
    session.append("step/start", {"turn": turn, "step": 2})
    session.append("assistant/message", assistant_message(turn, 2, f"a{turn}-2", "There is one file."), surface_op="append")
    session.append("step/end", {"turn": turn, "step": 2})
    return session.append("turn/end", {"turn": turn, "reason": {"kind": "completed"}})


def types(events):
    return [e["type"] for e in events]
