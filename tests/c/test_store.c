/* dsh_store_*: every function, NULL and invalid UTF-8 arguments, and the
 * statuses a store can give (OK, INVALID_ARGUMENT, NOT_FOUND, CONFLICT, IO,
 * UNSUPPORTED, CLOSED). argv[1]: scratch dir. */
#include "common.h"

static void null_and_utf8_checks(dsh_store *store) {
    char *out = NULL;
    EXPECT_STATUS(dsh_store_locate(NULL, "{\"id\":\"x\"}", &out), DSH_INVALID_ARGUMENT,
                  "`store` must not be NULL");
    EXPECT_STATUS(dsh_store_locate(store, NULL, &out), DSH_INVALID_ARGUMENT,
                  "`header_json` must not be NULL");
    EXPECT_STATUS(dsh_store_locate(store, BAD_UTF8, &out), DSH_INVALID_ARGUMENT,
                  "`header_json` is not valid UTF-8");
    EXPECT_STATUS(dsh_store_locate(store, "{\"id\":\"x\"}", NULL), DSH_INVALID_ARGUMENT,
                  "`out_json` must not be NULL");
    EXPECT_STATUS(dsh_store_create(NULL, "{\"id\":\"x\"}"), DSH_INVALID_ARGUMENT, "`store`");
    EXPECT_STATUS(dsh_store_create(store, NULL), DSH_INVALID_ARGUMENT, "`header_json`");
    EXPECT_STATUS(dsh_store_create(store, BAD_UTF8), DSH_INVALID_ARGUMENT, "not valid UTF-8");
    EXPECT_STATUS(dsh_store_create(store, "{\"id\":"), DSH_INVALID_ARGUMENT,
                  "session metadata is not a JSON object");
    EXPECT_STATUS(dsh_store_create(store, "{\"id\":\"x\",\"type\":\"session\"}"),
                  DSH_INVALID_ARGUMENT, "must not carry a type key");
    EXPECT_STATUS(dsh_store_append(NULL, "x", "[]"), DSH_INVALID_ARGUMENT, "`store`");
    EXPECT_STATUS(dsh_store_append(store, NULL, "[]"), DSH_INVALID_ARGUMENT, "`id`");
    EXPECT_STATUS(dsh_store_append(store, BAD_UTF8, "[]"), DSH_INVALID_ARGUMENT,
                  "`id` is not valid UTF-8");
    EXPECT_STATUS(dsh_store_append(store, "x", NULL), DSH_INVALID_ARGUMENT, "`events_json`");
    EXPECT_STATUS(dsh_store_append(store, "x", BAD_UTF8), DSH_INVALID_ARGUMENT,
                  "`events_json` is not valid UTF-8");
    EXPECT_STATUS(dsh_store_load(NULL, "x", &out), DSH_INVALID_ARGUMENT, "`store`");
    EXPECT_STATUS(dsh_store_load(store, NULL, &out), DSH_INVALID_ARGUMENT, "`id`");
    EXPECT_STATUS(dsh_store_load(store, BAD_UTF8, &out), DSH_INVALID_ARGUMENT, "UTF-8");
    EXPECT_STATUS(dsh_store_load(store, "x", NULL), DSH_INVALID_ARGUMENT, "`out_json`");
    EXPECT_STATUS(dsh_store_inspect(NULL, "x", &out), DSH_INVALID_ARGUMENT, "`store`");
    EXPECT_STATUS(dsh_store_inspect(store, NULL, &out), DSH_INVALID_ARGUMENT, "`id`");
    EXPECT_STATUS(dsh_store_inspect(store, "x", NULL), DSH_INVALID_ARGUMENT, "`out_json`");
    EXPECT_STATUS(dsh_store_read_from(NULL, "x", 0, &out), DSH_INVALID_ARGUMENT, "`store`");
    EXPECT_STATUS(dsh_store_read_from(store, NULL, 0, &out), DSH_INVALID_ARGUMENT, "`id`");
    EXPECT_STATUS(dsh_store_read_from(store, "x", 0, NULL), DSH_INVALID_ARGUMENT, "`out_json`");
    EXPECT_STATUS(dsh_store_read_raw(NULL, "x", &out), DSH_INVALID_ARGUMENT, "`store`");
    EXPECT_STATUS(dsh_store_read_raw(store, NULL, &out), DSH_INVALID_ARGUMENT, "`id`");
    EXPECT_STATUS(dsh_store_read_raw(store, "x", NULL), DSH_INVALID_ARGUMENT, "`out_json`");
    EXPECT_STATUS(dsh_store_list(NULL, &out), DSH_INVALID_ARGUMENT, "`store`");
    EXPECT_STATUS(dsh_store_list(store, NULL), DSH_INVALID_ARGUMENT, "`out_json`");
    EXPECT_STATUS(dsh_store_list_snapshots(NULL, &out), DSH_INVALID_ARGUMENT, "`store`");
    EXPECT_STATUS(dsh_store_list_snapshots(store, NULL), DSH_INVALID_ARGUMENT, "`out_json`");
    EXPECT(out == NULL); /* never written on failure */
}

static void round_trip(dsh_store *store) {
    char events[4096];
    char *out = NULL;

    CHECK(dsh_store_locate(store, "{\"id\":\"s1\"}", &out));
    EXPECT_RESULT(out, "{\"kind\":\"jsonl\",\"path\":\"/");

    CHECK(dsh_store_create(store, "{\"id\":\"s1\",\"createdAt\":5}"));
    EXPECT_STATUS(dsh_store_create(store, "{\"id\":\"s1\"}"), DSH_CONFLICT,
                  "session \"s1\" already exists");
    EXPECT(strcmp(dsh_last_error_code(), "SESSION_ALREADY_EXISTS") == 0);

    turn_array(events, sizeof events, 1, 0);
    CHECK(dsh_store_append(store, "s1", events));
    EXPECT(dsh_last_error_code()[0] == '\0'); /* cleared by the success */
    turn_array(events, sizeof events, 2, 6);
    CHECK(dsh_store_append(store, "s1", events));
    /* A seq gap is refused. */
    turn_array(events, sizeof events, 3, 20);
    EXPECT_STATUS(dsh_store_append(store, "s1", events), DSH_INVALID_ARGUMENT, "");
    EXPECT_STATUS(dsh_store_append(store, "s1", "[{\"type\":"), DSH_INVALID_ARGUMENT, "");

    CHECK(dsh_store_load(store, "s1", &out));
    EXPECT(strncmp(out, "{\"meta\":{", 9) == 0);
    EXPECT(count(out, "\"seq\":") == 12);
    EXPECT_RESULT(out, "\"createdAt\":5");

    CHECK(dsh_store_inspect(store, "s1", &out));
    EXPECT(count(out, "\"seq\":") == 12);
    dsh_free(out);

    CHECK(dsh_store_read_from(store, "s1", 10, &out));
    EXPECT(count(out, "\"seq\":") == 2 && strstr(out, "\"seq\":9,") == NULL);
    EXPECT_RESULT(out, "\"seq\":11,");
    CHECK(dsh_store_read_from(store, "s1", UINT64_MAX, &out));
    EXPECT_RESULT(out, "\"events\":[]");

    CHECK(dsh_store_read_raw(store, "s1", &out));
    EXPECT(strstr(out, "\"filename\":\"session.jsonl\"") != NULL);
    EXPECT_RESULT(out, "\"content\":\"{\\\"type\\\":\\\"session\\\"");
    out = (char *)"sentinel";
    CHECK(dsh_store_read_raw(store, "absent", &out));
    EXPECT(out == NULL); /* absent: DSH_OK and NULL */

    CHECK(dsh_store_list(store, &out));
    EXPECT(strncmp(out, "[{", 2) == 0);
    EXPECT_RESULT(out, "\"id\":\"s1\"");
    CHECK(dsh_store_list_snapshots(store, &out));
    EXPECT(strstr(out, "\"revision\":\"") != NULL);
    EXPECT_RESULT(out, "[{\"header\":{");

    out = NULL;
    EXPECT_STATUS(dsh_store_load(store, "nope", &out), DSH_NOT_FOUND, "session \"nope\" not found");
    EXPECT_STATUS(dsh_store_inspect(store, "nope", &out), DSH_NOT_FOUND, "not found");
    EXPECT_STATUS(dsh_store_read_from(store, "nope", 0, &out), DSH_NOT_FOUND, "not found");
    EXPECT(out == NULL);

    /* The last error survives dsh_free, and is cleared by the next call. */
    dsh_free(NULL);
    EXPECT(strstr(dsh_last_error(), "not found") != NULL);
    CHECK(dsh_store_list(store, &out));
    dsh_free(out);
}

static void io_error(const char *dir) {
    char path[2048], config[4096], events[4096];
    dsh_store *store = NULL;
    FILE *f;
    dsh_status status;
    snprintf(path, sizeof path, "%s/plain-file", dir);
    f = fopen(path, "w");
    EXPECT(f != NULL);
    fputs("not a directory\n", f);
    fclose(f);
    /* A root below a regular file cannot exist. */
    jsonl_config(config, sizeof config, dir, "plain-file/root", "none");
    status = dsh_store_open(config, &store);
    if (status == DSH_OK) {
        /* The backend opens lazily: the first write fails instead. */
        CHECK(dsh_store_create(store, "{\"id\":\"io\"}"));
        turn_array(events, sizeof events, 1, 0);
        EXPECT_STATUS(dsh_store_append(store, "io", events), DSH_IO, "");
        CHECK(dsh_store_close(store));
    } else {
        EXPECT_STATUS(status, DSH_IO, "");
        EXPECT(store == NULL);
    }
}

static void sqlite_store(const char *dir) {
    char config[4096];
    dsh_store *store = NULL;
    char *out = NULL;
    snprintf(config, sizeof config, "{\"backend\":\"sqlite\",\"path\":\"%s/sessions.db\"}", dir);
    CHECK(dsh_store_open(config, &store));
    CHECK(dsh_store_locate(store, "{\"id\":\"s1\"}", &out));
    EXPECT(strcmp(out, "null") == 0);
    dsh_free(out);
    out = NULL;
    EXPECT_STATUS(dsh_store_read_raw(store, "s1", &out), DSH_UNSUPPORTED, "");
    EXPECT(out == NULL);
    CHECK(dsh_store_close(store));
}

int main(int argc, char **argv) {
    dsh_store *store = NULL;
    char config[4096];
    char *out = NULL;
    EXPECT(argc >= 2);

    jsonl_config(config, sizeof config, argv[1], "store", "none");
    EXPECT_STATUS(dsh_store_open(NULL, &store), DSH_INVALID_ARGUMENT,
                  "`config_json` must not be NULL");
    EXPECT_STATUS(dsh_store_open(config, NULL), DSH_INVALID_ARGUMENT, "`out` must not be NULL");
    EXPECT_STATUS(dsh_store_open(BAD_UTF8, &store), DSH_INVALID_ARGUMENT,
                  "`config_json` is not valid UTF-8");
    EXPECT_STATUS(dsh_store_open("{", &store), DSH_INVALID_ARGUMENT, "store config");
    EXPECT_STATUS(dsh_store_open("{\"backend\":\"tape\"}", &store), DSH_INVALID_ARGUMENT, "");
    EXPECT(store == NULL);
    CHECK(dsh_store_close(NULL));

    CHECK(dsh_store_open(config, &store));
    null_and_utf8_checks(store);
    round_trip(store);
    CHECK(dsh_store_close(store));

    /* A fresh handle on the same root sees the data. */
    store = open_jsonl(argv[1], "store");
    CHECK(dsh_store_load(store, "s1", &out));
    EXPECT(count(out, "\"seq\":") == 12);
    dsh_free(out);
    CHECK(dsh_store_close(store));

    io_error(argv[1]);
    sqlite_store(argv[1]);
    puts("test_store: ok");
    return 0;
}
