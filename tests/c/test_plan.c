/* dsh_plan_*: the /plan command, exit review, pre_step, set, section,
 * projection, NULL / UTF-8 checks, dsh_plan_free(NULL), and DSH_INVARIANT
 * for a section that cannot be a C string. argv[1]: scratch dir. */
#include "common.h"

static const char *APPROVE =
    "{\"answers\":[{\"id\":\"plan-review\",\"selected\":[\"Approve\"],\"custom\":null}]}";

static void argument_checks(dsh_plan *plan, dsh_session *session) {
    char *out = NULL;
    dsh_plan *other = NULL;
    EXPECT_STATUS(dsh_plan_new(NULL, &other), DSH_INVALID_ARGUMENT, "`config_json`");
    EXPECT_STATUS(dsh_plan_new(BAD_UTF8, &other), DSH_INVALID_ARGUMENT, "UTF-8");
    EXPECT_STATUS(dsh_plan_new("{\"section\":\"x\"}", NULL), DSH_INVALID_ARGUMENT, "`out`");
    EXPECT_STATUS(dsh_plan_new("{}", &other), DSH_INVALID_ARGUMENT,
                  "PlanModeConfig needs a string `section`");
    EXPECT_STATUS(dsh_plan_new("{\"section\":\" \"}", &other), DSH_INVALID_ARGUMENT,
                  "PlanModeConfig needs a non-empty `section`");
    EXPECT(other == NULL);

    EXPECT_STATUS(dsh_plan_get(NULL, session, &out), DSH_INVALID_ARGUMENT, "`plan`");
    EXPECT_STATUS(dsh_plan_get(plan, NULL, &out), DSH_INVALID_ARGUMENT, "`session`");
    EXPECT_STATUS(dsh_plan_get(plan, session, NULL), DSH_INVALID_ARGUMENT, "`out_json`");
    EXPECT_STATUS(dsh_plan_set(NULL, session, true, &out), DSH_INVALID_ARGUMENT, "`plan`");
    EXPECT_STATUS(dsh_plan_set(plan, NULL, true, &out), DSH_INVALID_ARGUMENT, "`session`");
    EXPECT_STATUS(dsh_plan_set(plan, session, true, NULL), DSH_INVALID_ARGUMENT, "`out_json`");
    EXPECT_STATUS(dsh_plan_pre_step(NULL, session, &out), DSH_INVALID_ARGUMENT, "`plan`");
    EXPECT_STATUS(dsh_plan_pre_step(plan, NULL, &out), DSH_INVALID_ARGUMENT, "`session`");
    EXPECT_STATUS(dsh_plan_pre_step(plan, session, NULL), DSH_INVALID_ARGUMENT, "`out_json`");
    EXPECT_STATUS(dsh_plan_section(NULL, session, &out), DSH_INVALID_ARGUMENT, "`plan`");
    EXPECT_STATUS(dsh_plan_section(plan, NULL, &out), DSH_INVALID_ARGUMENT, "`session`");
    EXPECT_STATUS(dsh_plan_section(plan, session, NULL), DSH_INVALID_ARGUMENT, "`out_text`");
    EXPECT_STATUS(dsh_plan_command(NULL, session, "", false, &out), DSH_INVALID_ARGUMENT, "`plan`");
    EXPECT_STATUS(dsh_plan_command(plan, NULL, "", false, &out), DSH_INVALID_ARGUMENT,
                  "`session`");
    EXPECT_STATUS(dsh_plan_command(plan, session, NULL, false, &out), DSH_INVALID_ARGUMENT,
                  "`raw_input` must not be NULL");
    EXPECT_STATUS(dsh_plan_command(plan, session, BAD_UTF8, false, &out), DSH_INVALID_ARGUMENT,
                  "`raw_input` is not valid UTF-8");
    EXPECT_STATUS(dsh_plan_command(plan, session, "", false, NULL), DSH_INVALID_ARGUMENT,
                  "`out_json`");
    EXPECT_STATUS(dsh_plan_exit_check(NULL, session, "# P", &out), DSH_INVALID_ARGUMENT, "`plan`");
    EXPECT_STATUS(dsh_plan_exit_check(plan, NULL, "# P", &out), DSH_INVALID_ARGUMENT,
                  "`session`");
    EXPECT_STATUS(dsh_plan_exit_check(plan, session, NULL, &out), DSH_INVALID_ARGUMENT,
                  "`plan_markdown` must not be NULL");
    EXPECT_STATUS(dsh_plan_exit_check(plan, session, BAD_UTF8, &out), DSH_INVALID_ARGUMENT,
                  "`plan_markdown` is not valid UTF-8");
    EXPECT_STATUS(dsh_plan_exit_check(plan, session, "# P", NULL), DSH_INVALID_ARGUMENT,
                  "`out_json`");
    EXPECT_STATUS(dsh_plan_exit_answer(NULL, session, APPROVE, &out), DSH_INVALID_ARGUMENT,
                  "`plan`");
    EXPECT_STATUS(dsh_plan_exit_answer(plan, NULL, APPROVE, &out), DSH_INVALID_ARGUMENT,
                  "`session`");
    EXPECT_STATUS(dsh_plan_exit_answer(plan, session, NULL, &out), DSH_INVALID_ARGUMENT,
                  "`answer_json` must not be NULL");
    EXPECT_STATUS(dsh_plan_exit_answer(plan, session, BAD_UTF8, &out), DSH_INVALID_ARGUMENT,
                  "`answer_json` is not valid UTF-8");
    EXPECT_STATUS(dsh_plan_exit_answer(plan, session, APPROVE, NULL), DSH_INVALID_ARGUMENT,
                  "`out_json`");
    EXPECT_STATUS(dsh_plan_exit_answer(plan, session, "{\"answers\":7}", &out),
                  DSH_INVALID_ARGUMENT, "");
    EXPECT_STATUS(dsh_plan_project(NULL, &out), DSH_INVALID_ARGUMENT, "`events_json`");
    EXPECT_STATUS(dsh_plan_project(BAD_UTF8, &out), DSH_INVALID_ARGUMENT, "UTF-8");
    EXPECT_STATUS(dsh_plan_project("[]", NULL), DSH_INVALID_ARGUMENT, "`out_json`");
    EXPECT_STATUS(dsh_plan_project("[{\"type\":1}]", &out), DSH_INVALID_ARGUMENT,
                  "plan projection: events[0]");
    EXPECT(out == NULL);
}

int main(int argc, char **argv) {
    dsh_store *store;
    dsh_session *session = NULL;
    dsh_plan *plan = NULL, *nul_plan = NULL;
    char *out = NULL;
    uint64_t seq = 0;
    EXPECT(argc >= 2);
    store = open_jsonl(argv[1], "store");
    CHECK(dsh_plan_new("{\"section\":\"PLAN MODE: read only.\"}", &plan));
    CHECK(dsh_session_start(store, "{\"id\":\"plan\"}", &session));
    argument_checks(plan, session);
    dsh_plan_free(NULL);

    CHECK(dsh_plan_get(plan, session, &out));
    EXPECT(strcmp(out, "{\"active\":false}") == 0);
    dsh_free(out);
    CHECK(dsh_plan_section(plan, session, &out));
    EXPECT(strcmp(out, "") == 0);
    dsh_free(out);

    /* /plan with a message: committed (no open turn) plus a steer. */
    CHECK(dsh_plan_command(plan, session, "  design the cache ", false, &out));
    EXPECT(strstr(out, "\"text\":\"Plan mode on. Use /plan off to leave.\"") != NULL);
    EXPECT_RESULT(out, "\"steer\":");
    CHECK(dsh_plan_section(plan, session, &out));
    EXPECT(strcmp(out, "PLAN MODE: read only.") == 0);
    dsh_free(out);
    CHECK(dsh_plan_set(plan, session, true, &out));
    EXPECT_RESULT(out, "\"outcome\":\"noop\"");

    /* Inside a turn: the review, approval, and the commit at the next step. */
    CHECK(dsh_session_append(session, "turn/start", "{\"turn\":1}", NULL, &seq));
    CHECK(dsh_plan_exit_check(plan, session, "just do it", &out));
    EXPECT_RESULT(out, "\"ok\":false");
    CHECK(dsh_plan_exit_check(plan, session, "# Plan\n1. read\n2. write", &out));
    EXPECT(strstr(out, "\"ok\":true") != NULL);
    EXPECT_RESULT(out, "Approve this plan and leave plan mode?");
    CHECK(dsh_plan_exit_answer(plan, session, "{\"dismissed\":true}", &out));
    EXPECT_RESULT(out, "dismissed the plan review");
    CHECK(dsh_plan_exit_answer(plan, session, APPROVE, &out));
    EXPECT(strcmp(out, "{\"approved\":true}") == 0);
    dsh_free(out);
    CHECK(dsh_plan_get(plan, session, &out));
    EXPECT(strcmp(out, "{\"active\":true,\"pending\":false}") == 0);
    dsh_free(out);
    CHECK(dsh_plan_pre_step(plan, session, &out));
    EXPECT_RESULT(out, "\"appended\":true");
    CHECK(dsh_plan_get(plan, session, &out));
    EXPECT(strcmp(out, "{\"active\":false}") == 0);
    dsh_free(out);

    /* /plan off when inactive; /plan off with attachments is an error result. */
    CHECK(dsh_plan_command(plan, session, "off", false, &out));
    EXPECT_RESULT(out, "Plan mode is already inactive.");
    CHECK(dsh_plan_command(plan, session, "off", true, &out));
    EXPECT_RESULT(out, "\"kind\":\"error\"");

    /* The projection of the session's own events. */
    CHECK(dsh_session_events(session, 0, &out));
    {
        char *view = NULL;
        CHECK(dsh_plan_project(out, &view));
        EXPECT(strcmp(view, "{\"active\":false,\"pending\":false}") == 0);
        dsh_free(view);
    }
    dsh_free(out);

    /* A section text with a NUL cannot be returned as a C string. */
    CHECK(dsh_plan_new("{\"section\":\"a\\u0000b\"}", &nul_plan));
    CHECK(dsh_plan_set(nul_plan, session, true, &out));
    EXPECT_RESULT(out, "\"outcome\":\"queued\"");
    out = NULL;
    EXPECT_STATUS(dsh_plan_section(nul_plan, session, &out), DSH_INVARIANT,
                  "contains a NUL character");
    EXPECT(out == NULL);
    dsh_plan_free(nul_plan);

    CHECK(dsh_session_close(session));
    dsh_plan_free(plan);
    CHECK(dsh_store_close(store));
    puts("test_plan: ok");
    return 0;
}
