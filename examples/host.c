/*
 * host.c: a small C host of dsh-persist (the C ABI in include/dsh_persist.h).
 *
 *   host crash  [STORE]   open a JSONL store, run a two-turn conversation
 *                         with tool calls in plan mode, then start a third
 *                         turn, make it durable and "crash" (_exit) while a
 *                         tool call is still unanswered.
 *   host resume [STORE]   resume the crashed session: print the repaired log
 *                         tail (synthetic tool/result, step/end, turn/end),
 *                         the plan state folded from the log, then leave plan
 *                         mode through the exit_plan_mode review and finish
 *                         a turn.
 *
 * STORE defaults to ./dsh-demo-store. Build and run both steps with
 * examples/run-host.sh.
 */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dsh_persist.h"

#define SESSION_ID "demo"
#define MODEL_SOURCE \
    "{\"kind\":\"model\",\"provider\":\"deepseek-official\",\"model\":\"deepseek-v4-flash\"}"
#define APPEND_TO_SURFACE "{\"surfaceOp\":\"append\"}"

/* Any failure: print the status and the library's message, then exit. */
static void check(dsh_status status, const char *what) {
    if (status != DSH_OK) {
        const char *code = dsh_last_error_code();
        fprintf(stderr, "error: %s failed (status %d): %s%s%s%s\n", what, (int)status,
                dsh_last_error(), code[0] ? " [code " : "", code, code[0] ? "]" : "");
        exit(1);
    }
}

static uint64_t append(dsh_session *s, const char *type, const char *data, const char *options) {
    uint64_t seq = 0;
    check(dsh_session_append(s, type, data, options, &seq), type);
    return seq;
}

static void user_message(dsh_session *s, int turn, const char *text) {
    char data[1024];
    snprintf(data, sizeof data,
             "{\"id\":\"user-%d\",\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"%s\"}],"
             "\"source\":{\"kind\":\"user\"}}",
             turn, text);
    append(s, "user/message", data, APPEND_TO_SURFACE);
    printf("  user      > %s\n", text);
}

static void step(dsh_session *s, const char *type, int turn, int step_no) {
    char data[64];
    snprintf(data, sizeof data, "{\"turn\":%d,\"step\":%d}", turn, step_no);
    append(s, type, data, NULL);
}

/* An assistant message; with `tool`, it also calls that tool (and the
 * tool/call event records the call as started). */
static void assistant(dsh_session *s, int turn, int step_no, const char *text, const char *call_id,
                      const char *tool, const char *arguments) {
    char data[2048], call[1024];
    if (tool != NULL) {
        snprintf(call, sizeof call,
                 ",{\"type\":\"tool-call\",\"id\":\"%s\",\"name\":\"%s\",\"arguments\":%s}", call_id,
                 tool, arguments);
    } else {
        call[0] = '\0';
    }
    snprintf(data, sizeof data,
             "{\"turn\":%d,\"step\":%d,\"message\":{\"id\":\"assistant-%d-%d\",\"role\":\"assistant\","
             "\"content\":[{\"type\":\"text\",\"text\":\"%s\"}%s],\"source\":" MODEL_SOURCE "}}",
             turn, step_no, turn, step_no, text, call);
    append(s, "assistant/message", data, APPEND_TO_SURFACE);
    printf("  assistant > %s\n", text);
    if (tool != NULL) {
        snprintf(data, sizeof data,
                 "{\"turn\":%d,\"step\":%d,\"callId\":\"%s\",\"name\":\"%s\",\"arguments\":%s}", turn,
                 step_no, call_id, tool, arguments);
        append(s, "tool/call", data, NULL);
        printf("  tool call > %s %s\n", tool, arguments);
    }
}

static void tool_result(dsh_session *s, int turn, int step_no, const char *call_id,
                        const char *output) {
    char data[2048];
    snprintf(data, sizeof data,
             "{\"turn\":%d,\"step\":%d,\"message\":{\"id\":\"result-%s\",\"role\":\"user\","
             "\"content\":[{\"type\":\"tool-result\",\"toolCallId\":\"%s\",\"content\":[{\"type\":"
             "\"text\",\"text\":\"%s\"}]}],\"source\":{\"kind\":\"tool\",\"callId\":\"%s\"}}}",
             turn, step_no, call_id, call_id, output, call_id);
    append(s, "tool/result", data, APPEND_TO_SURFACE);
    printf("  result    < %s\n", output);
}

static void turn_start(dsh_session *s, int turn) {
    char data[32];
    snprintf(data, sizeof data, "{\"turn\":%d}", turn);
    append(s, "turn/start", data, NULL);
    printf("turn %d\n", turn);
}

static void turn_end(dsh_session *s, int turn) {
    char data[96];
    snprintf(data, sizeof data, "{\"turn\":%d,\"reason\":{\"kind\":\"completed\"}}", turn);
    append(s, "turn/end", data, NULL);
}

/* Prints a JSON result of the plan controller and frees it. */
static void show_plan(const char *label, char *json) {
    printf("  plan      : %-12s %s\n", label, json);
    dsh_free(json);
}

/* --- printing the log ------------------------------------------------- */

/* The end of the JSON value starting at p (an object or array). */
static const char *skip_value(const char *p) {
    int depth = 0;
    int in_string = 0;
    for (; *p; p++) {
        if (in_string) {
            if (*p == '\\' && p[1]) {
                p++;
            } else if (*p == '"') {
                in_string = 0;
            }
        } else if (*p == '"') {
            in_string = 1;
        } else if (*p == '{' || *p == '[') {
            depth++;
        } else if (*p == '}' || *p == ']') {
            if (--depth == 0) {
                return p + 1;
            }
        }
    }
    return p;
}

/* Prints each event of a JSON array, one line each, shortened. */
static void print_events(const char *array) {
    const char *p = strchr(array, '{');
    while (p != NULL && *p == '{') {
        const char *end = skip_value(p);
        int len = (int)(end - p);
        if (len > 150) {
            printf("    %.147s...\n", p);
        } else {
            printf("    %.*s\n", len, p);
        }
        p = (*end == ',') ? end + 1 : NULL;
    }
}

/* The number of items of a JSON array of objects. */
static int count_items(const char *array) {
    int n = 0;
    const char *p = strchr(array, '{');
    while (p != NULL && *p == '{') {
        const char *end = skip_value(p);
        n++;
        p = (*end == ',') ? end + 1 : NULL;
    }
    return n;
}

/* The seq of the last `turn/start` in an events array (0 when none). */
static unsigned long last_turn_start(const char *array) {
    const char *key = "{\"type\":\"turn/start\",\"seq\":";
    unsigned long seq = 0;
    for (const char *p = strstr(array, key); p != NULL; p = strstr(p + 1, key)) {
        seq = strtoul(p + strlen(key), NULL, 10);
    }
    return seq;
}

static dsh_store *open_store(const char *root) {
    char config[4096];
    dsh_store *store = NULL;
    snprintf(config, sizeof config,
             "{\"backend\":\"jsonl\",\"root\":\"%s\",\"compression\":\"zstd\",\"packChunks\":true}",
             root);
    check(dsh_store_open(config, &store), "dsh_store_open");
    return store;
}

static const char *PLAN_CONFIG =
    "{\"section\":\"Plan mode is on: read and think, do not modify files. "
    "Present a plan with exit_plan_mode.\"}";

static int run_crash(const char *root) {
    dsh_store *store = open_store(root);
    dsh_plan *plan = NULL;
    dsh_session *session = NULL;
    char *out = NULL;
    dsh_status status;

    printf("dsh-persist %s: store %s\n", dsh_version(), root);
    status = dsh_session_start(store, "{\"id\":\"" SESSION_ID "\",\"cwd\":\"/home/dev/project\"}",
                               &session);
    if (status == DSH_CONFLICT) {
        fprintf(stderr, "error: %s\n(remove %s or pass another store path)\n", dsh_last_error(), root);
        dsh_store_close(store);
        return 1;
    }
    check(status, "dsh_session_start");
    check(dsh_plan_new(PLAN_CONFIG, &plan), "dsh_plan_new");

    /* The user types "/plan add a --json flag" before the first turn. */
    check(dsh_plan_command(plan, session, "add a --json flag", false, &out), "/plan");
    show_plan("/plan", out);

    turn_start(session, 1);
    user_message(session, 1, "add a --json flag");
    step(session, "step/start", 1, 1);
    check(dsh_plan_pre_step(plan, session, &out), "pre_step");
    show_plan("pre_step", out);
    assistant(session, 1, 1, "Let me read the CLI first.", "call-1", "read_file",
              "{\"path\":\"src/cli.rs\"}");
    tool_result(session, 1, 1, "call-1", "fn main() { /* 120 lines */ }");
    step(session, "step/end", 1, 1);
    step(session, "step/start", 1, 2);
    assistant(session, 1, 2, "The flag belongs in parse_args; I will outline a plan.", NULL, NULL,
              NULL);
    step(session, "step/end", 1, 2);
    turn_end(session, 1);

    turn_start(session, 2);
    user_message(session, 2, "which files print output?");
    step(session, "step/start", 2, 1);
    assistant(session, 2, 1, "Searching.", "call-2", "bash", "{\"command\":\"grep -l println src\"}");
    tool_result(session, 2, 1, "call-2", "src/cli.rs src/report.rs");
    step(session, "step/end", 2, 1);
    step(session, "step/start", 2, 2);
    assistant(session, 2, 2, "Two files: cli.rs and report.rs.", NULL, NULL, NULL);
    step(session, "step/end", 2, 2);
    turn_end(session, 2);
    check(dsh_session_flush(session), "flush");
    printf("flushed: two complete turns are durable\n");

    /* A third turn starts, the model calls a tool... and the host dies. */
    turn_start(session, 3);
    user_message(session, 3, "run the tests");
    step(session, "step/start", 3, 1);
    assistant(session, 3, 1, "Running the test suite.", "call-3", "bash",
              "{\"command\":\"cargo test\"}");
    check(dsh_session_flush(session), "flush");
    check(dsh_session_events(session, 0, &out), "events");
    printf("CRASH: exiting without closing; the log ends inside turn 3 with call-3 unanswered "
           "(%d events durable)\n",
           count_items(out));
    dsh_free(out);
    fflush(stdout);
    _exit(0);
}

static int run_resume(const char *root) {
    dsh_store *store = open_store(root);
    dsh_plan *plan = NULL;
    dsh_session *session = NULL;
    char *out = NULL;
    unsigned long tail_from;

    printf("dsh-persist %s: store %s\n", dsh_version(), root);
    check(dsh_store_inspect(store, SESSION_ID, &out), "dsh_store_inspect");
    dsh_free(out);
    check(dsh_session_resume(store, SESSION_ID, &session), "dsh_session_resume");

    check(dsh_session_events(session, 0, &out), "events");
    tail_from = last_turn_start(out);
    dsh_free(out);
    printf("resumed \"%s\"; the repaired tail of the log (from turn 3's turn/start, seq %lu):\n",
           SESSION_ID, tail_from);
    check(dsh_session_events(session, tail_from, &out), "events");
    print_events(out);
    {
        /* The closers the repair synthesized for the unanswered call. */
        const char *synthetic = strstr(out, "\"id\":\"interrupted-tool-result-");
        const char *text = synthetic ? strstr(synthetic, "\"text\":\"") : NULL;
        if (text != NULL) {
            printf("synthetic tool/result for call-3 tells the model: %.120s...\n", text + 8);
        }
        printf("repair closed turn 3: %s\n",
               strstr(out, "\"reason\":{\"kind\":\"interrupted\"}") ? "turn/end {kind: interrupted}"
                                                                   : "NOT CLOSED");
    }
    dsh_free(out);

    check(dsh_plan_new(PLAN_CONFIG, &plan), "dsh_plan_new");
    check(dsh_plan_get(plan, session, &out), "plan get");
    show_plan("after resume", out);
    check(dsh_plan_section(plan, session, &out), "plan section");
    printf("  plan      : section      \"%s\"\n", out);
    dsh_free(out);

    /* Turn 4: the model presents its plan; the user approves. */
    turn_start(session, 4);
    user_message(session, 4, "the tests were interrupted; please present your plan");
    step(session, "step/start", 4, 1);
    check(dsh_plan_pre_step(plan, session, &out), "pre_step");
    show_plan("pre_step", out);
    assistant(session, 4, 1, "Here is the plan.", "call-4", "exit_plan_mode",
              "{\"plan\":\"# Add --json\\n1. parse the flag\\n2. print JSON\"}");
    check(dsh_plan_exit_check(plan, session, "# Add --json\n1. parse the flag\n2. print JSON", &out),
          "exit_check");
    show_plan("exit_check", out);
    check(dsh_plan_exit_answer(
              plan, session,
              "{\"answers\":[{\"id\":\"plan-review\",\"selected\":[\"Approve\"],\"custom\":null}]}",
              &out),
          "exit_answer");
    show_plan("exit_answer", out);
    tool_result(session, 4, 1, "call-4", "The user approved the plan.");
    step(session, "step/end", 4, 1);
    step(session, "step/start", 4, 2);
    check(dsh_plan_pre_step(plan, session, &out), "pre_step");
    show_plan("pre_step", out);
    check(dsh_plan_get(plan, session, &out), "plan get");
    show_plan("now", out);
    assistant(session, 4, 2, "Plan approved; implementing it now.", NULL, NULL, NULL);
    step(session, "step/end", 4, 2);
    turn_end(session, 4);

    check(dsh_session_messages(session, &out), "messages");
    printf("model-visible transcript: %d messages\n", count_items(out));
    dsh_free(out);
    check(dsh_session_close(session), "dsh_session_close");
    dsh_plan_free(plan);

    check(dsh_store_load(store, SESSION_ID, &out), "dsh_store_load");
    printf("closed; a cold load returns %d events\n", count_items(strstr(out, "\"events\":")));
    dsh_free(out);
    check(dsh_store_close(store), "dsh_store_close");
    return 0;
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "";
    const char *root = argc > 2 ? argv[2] : "./dsh-demo-store";
    char absolute[4096];
    /* The store wants an absolute root. */
    if (root[0] != '/') {
        if (getcwd(absolute, sizeof absolute - strlen(root) - 2) == NULL) {
            perror("getcwd");
            return 1;
        }
        strcat(absolute, "/");
        strcat(absolute, root);
        root = absolute;
    }
    if (strcmp(mode, "crash") == 0) {
        return run_crash(root);
    }
    if (strcmp(mode, "resume") == 0) {
        return run_resume(root);
    }
    fprintf(stderr, "usage: %s crash|resume [STORE]\n", argv[0]);
    return 2;
}
