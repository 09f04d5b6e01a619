/* dsh_session_*: every function, NULL / UTF-8 / JSON checks, resume with
 * repair, fork, close(NULL), and DSH_CLOSED after the store closes.
 * argv[1]: scratch dir. */
#include "common.h"

static void argument_checks(dsh_store *store, dsh_session *session) {
    dsh_session *other = NULL;
    uint64_t seq = 42;
    char *out = NULL;
    EXPECT_STATUS(dsh_session_start(NULL, "{\"id\":\"x\"}", &other), DSH_INVALID_ARGUMENT,
                  "`store` must not be NULL");
    EXPECT_STATUS(dsh_session_start(store, NULL, &other), DSH_INVALID_ARGUMENT, "`header_json`");
    EXPECT_STATUS(dsh_session_start(store, BAD_UTF8, &other), DSH_INVALID_ARGUMENT, "UTF-8");
    EXPECT_STATUS(dsh_session_start(store, "{\"id\":\"x\"}", NULL), DSH_INVALID_ARGUMENT, "`out`");
    EXPECT_STATUS(dsh_session_start(store, "{\"id\":\"\"}", &other), DSH_INVALID_ARGUMENT, "id");
    EXPECT_STATUS(dsh_session_resume(NULL, "x", &other), DSH_INVALID_ARGUMENT, "`store`");
    EXPECT_STATUS(dsh_session_resume(store, NULL, &other), DSH_INVALID_ARGUMENT, "`id`");
    EXPECT_STATUS(dsh_session_resume(store, BAD_UTF8, &other), DSH_INVALID_ARGUMENT, "UTF-8");
    EXPECT_STATUS(dsh_session_resume(store, "x", NULL), DSH_INVALID_ARGUMENT, "`out`");
    EXPECT_STATUS(dsh_session_fork(NULL, "x", -1, NULL, &other), DSH_INVALID_ARGUMENT, "`store`");
    EXPECT_STATUS(dsh_session_fork(store, NULL, -1, NULL, &other), DSH_INVALID_ARGUMENT,
                  "`source_id`");
    EXPECT_STATUS(dsh_session_fork(store, "x", -1, BAD_UTF8, &other), DSH_INVALID_ARGUMENT,
                  "`child_header_json` is not valid UTF-8");
    EXPECT_STATUS(dsh_session_fork(store, "x", -1, NULL, NULL), DSH_INVALID_ARGUMENT, "`out`");
    EXPECT(other == NULL);

    EXPECT_STATUS(dsh_session_append(NULL, "turn/start", "{}", NULL, &seq), DSH_INVALID_ARGUMENT,
                  "`session` must not be NULL");
    EXPECT_STATUS(dsh_session_append(session, NULL, "{}", NULL, &seq), DSH_INVALID_ARGUMENT,
                  "`type` must not be NULL");
    EXPECT_STATUS(dsh_session_append(session, BAD_UTF8, "{}", NULL, &seq), DSH_INVALID_ARGUMENT,
                  "`type` is not valid UTF-8");
    EXPECT_STATUS(dsh_session_append(session, "turn/start", NULL, NULL, &seq),
                  DSH_INVALID_ARGUMENT, "`data_json` must not be NULL");
    EXPECT_STATUS(dsh_session_append(session, "turn/start", BAD_UTF8, NULL, &seq),
                  DSH_INVALID_ARGUMENT, "`data_json` is not valid UTF-8");
    EXPECT_STATUS(dsh_session_append(session, "turn/start", "{\"turn\":1}", BAD_UTF8, &seq),
                  DSH_INVALID_ARGUMENT, "`options_json` is not valid UTF-8");
    EXPECT_STATUS(dsh_session_append(session, "turn/start", "{\"turn\":1}", NULL, NULL),
                  DSH_INVALID_ARGUMENT, "`out_seq` must not be NULL");
    EXPECT_STATUS(dsh_session_append(session, "turn/start", "{\"turn\":", NULL, &seq),
                  DSH_INVALID_ARGUMENT, "");
    EXPECT_STATUS(dsh_session_append(session, "turn/start", "{\"turn\":1}", "{\"x\":1}", &seq),
                  DSH_INVALID_ARGUMENT, "unknown key \"x\"");
    EXPECT_STATUS(dsh_session_append(session, "made/up", "{}", NULL, &seq), DSH_INVALID_ARGUMENT,
                  "unknown to this harness");
    EXPECT_STATUS(dsh_session_append(session, "step/start", "{\"turn\":1,\"step\":1}", NULL, &seq),
                  DSH_INVALID_ARGUMENT, "outside a turn");
    EXPECT(seq == 42); /* untouched on failure */

    EXPECT_STATUS(dsh_session_flush(NULL), DSH_INVALID_ARGUMENT, "`session`");
    EXPECT_STATUS(dsh_session_events(NULL, 0, &out), DSH_INVALID_ARGUMENT, "`session`");
    EXPECT_STATUS(dsh_session_events(session, 0, NULL), DSH_INVALID_ARGUMENT, "`out_json`");
    EXPECT_STATUS(dsh_session_header(NULL, &out), DSH_INVALID_ARGUMENT, "`session`");
    EXPECT_STATUS(dsh_session_header(session, NULL), DSH_INVALID_ARGUMENT, "`out_json`");
    EXPECT_STATUS(dsh_session_messages(NULL, &out), DSH_INVALID_ARGUMENT, "`session`");
    EXPECT_STATUS(dsh_session_messages(session, NULL), DSH_INVALID_ARGUMENT, "`out_json`");
    EXPECT_STATUS(dsh_session_background_error(NULL, &out), DSH_INVALID_ARGUMENT, "`session`");
    EXPECT_STATUS(dsh_session_background_error(session, NULL), DSH_INVALID_ARGUMENT,
                  "`out_json`");
    EXPECT(out == NULL);
}

int main(int argc, char **argv) {
    dsh_store *store;
    dsh_session *session = NULL, *resumed = NULL, *child = NULL, *generated = NULL,
                *again = NULL;
    char *out = NULL;
    uint64_t seq = 0;
    EXPECT(argc >= 2);
    store = open_jsonl(argv[1], "store");

    CHECK(dsh_session_start(store, "{\"id\":\"live\",\"cwd\":\"/work\"}", &session));
    EXPECT(session != NULL);
    EXPECT_STATUS(dsh_session_start(store, "{\"id\":\"live\"}", &again), DSH_CONFLICT,
                  "already exists");
    EXPECT(strcmp(dsh_last_error_code(), "SESSION_ALREADY_EXISTS") == 0);
    argument_checks(store, session);

    append_turn(session, 1);
    CHECK(dsh_session_flush(session));
    CHECK(dsh_session_events(session, 0, &out));
    EXPECT(count(out, "\"seq\":") == 6);
    EXPECT_RESULT(out, "\"type\":\"turn/end\"");
    CHECK(dsh_session_events(session, 1000, &out));
    EXPECT(strcmp(out, "[]") == 0);
    dsh_free(out);
    CHECK(dsh_session_header(session, &out));
    EXPECT_RESULT(out, "\"cwd\":\"/work\"");
    CHECK(dsh_session_messages(session, &out));
    EXPECT(count(out, "\"role\":") == 2);
    EXPECT_RESULT(out, "answer 1");
    out = (char *)"sentinel";
    CHECK(dsh_session_background_error(session, &out));
    EXPECT(out == NULL);

    /* Open a second turn, make it durable, close: resume repairs it. */
    CHECK(dsh_session_append(session, "turn/start", "{\"turn\":2}", NULL, &seq));
    EXPECT(seq == 6);
    CHECK(dsh_session_close(session));
    CHECK(dsh_session_close(NULL));

    CHECK(dsh_session_resume(store, "live", &resumed));
    EXPECT_STATUS(dsh_session_resume(store, "live", &again), DSH_CONFLICT, "already live");
    EXPECT_STATUS(dsh_session_resume(store, "ghost", &again), DSH_NOT_FOUND, "not found");
    EXPECT(again == NULL);
    CHECK(dsh_session_events(resumed, 6, &out));
    EXPECT(strstr(out, "\"type\":\"turn/end\"") != NULL);
    EXPECT_RESULT(out, "\"type\":\"session/end-seed\"");
    /* Load of a live session with a closed turn returns its snapshot. */
    CHECK(dsh_store_load(store, "live", &out));
    dsh_free(out);

    CHECK(dsh_session_fork(store, "live", 5, "{\"id\":\"child\"}", &child));
    CHECK(dsh_session_header(child, &out));
    EXPECT(strstr(out, "\"parentSession\":\"live\"") != NULL);
    EXPECT_RESULT(out, "\"seedLength\":6");
    CHECK(dsh_session_fork(store, "live", -1, NULL, &generated));
    CHECK(dsh_session_header(generated, &out));
    EXPECT_RESULT(out, "\"parentSession\":\"live\"");
    EXPECT_STATUS(dsh_session_fork(store, "live", 9999, NULL, &again), DSH_INVALID_ARGUMENT,
                  "fork boundary 9999");
    EXPECT(strcmp(dsh_last_error_code(), "INVALID_BOUNDARY") == 0);
    EXPECT_STATUS(dsh_session_fork(store, "live", 6, NULL, &again), DSH_INVALID_ARGUMENT,
                  "ends inside the turn");
    EXPECT(strcmp(dsh_last_error_code(), "OPEN_TURN") == 0);
    EXPECT_STATUS(dsh_session_fork(store, "ghost", -1, NULL, &again), DSH_NOT_FOUND,
                  "cannot fork");
    EXPECT(strcmp(dsh_last_error_code(), "SESSION_NOT_FOUND") == 0);
    EXPECT(again == NULL);
    append_turn(child, 2);

    /* Closing the store drains the sessions; they answer DSH_CLOSED. */
    CHECK(dsh_store_close(store));
    EXPECT_STATUS(dsh_session_append(child, "turn/start", "{\"turn\":3}", NULL, &seq), DSH_CLOSED,
                  "closed");
    CHECK(dsh_session_events(child, 0, &out)); /* reads of memory still work */
    EXPECT(count(out, "\"seq\":") == 13);
    dsh_free(out);
    CHECK(dsh_session_close(child));
    CHECK(dsh_session_close(generated));
    CHECK(dsh_session_close(resumed));

    /* The drained child is durable. */
    store = open_jsonl(argv[1], "store");
    CHECK(dsh_store_load(store, "child", &out));
    EXPECT(count(out, "\"seq\":") == 13);
    dsh_free(out);
    CHECK(dsh_store_close(store));
    puts("test_session: ok");
    return 0;
}
