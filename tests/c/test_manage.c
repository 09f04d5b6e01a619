/* dsh_store_delete / prune / salvage / import (issue 19): NULL and UTF-8
 * checks, the statuses (OK, NOT_FOUND, BUSY, CONFLICT, INVALID_ARGUMENT)
 * and the report JSON, on a JSONL root and a SQLite file. argv[1]: scratch
 * dir. */
#include "common.h"

static void null_and_utf8_checks(dsh_store *store) {
    char *out = NULL;
    EXPECT_STATUS(dsh_store_delete(NULL, "x"), DSH_INVALID_ARGUMENT, "`store`");
    EXPECT_STATUS(dsh_store_delete(store, NULL), DSH_INVALID_ARGUMENT, "`id` must not be NULL");
    EXPECT_STATUS(dsh_store_delete(store, BAD_UTF8), DSH_INVALID_ARGUMENT, "UTF-8");
    EXPECT_STATUS(dsh_store_prune(NULL, "{}", &out), DSH_INVALID_ARGUMENT, "`store`");
    EXPECT_STATUS(dsh_store_prune(store, NULL, &out), DSH_INVALID_ARGUMENT, "`options_json`");
    EXPECT_STATUS(dsh_store_prune(store, "{\"keepNewest\":1}", NULL), DSH_INVALID_ARGUMENT,
                  "`out_json`");
    EXPECT_STATUS(dsh_store_prune(store, "{}", &out), DSH_INVALID_ARGUMENT, "needs a criterion");
    EXPECT_STATUS(dsh_store_prune(store, "{\"keepNewest\":-1}", &out), DSH_INVALID_ARGUMENT,
                  "keepNewest");
    EXPECT_STATUS(dsh_store_salvage(NULL, "x", "y", &out), DSH_INVALID_ARGUMENT, "`store`");
    EXPECT_STATUS(dsh_store_salvage(store, NULL, "y", &out), DSH_INVALID_ARGUMENT, "`id`");
    EXPECT_STATUS(dsh_store_salvage(store, "x", NULL, &out), DSH_INVALID_ARGUMENT, "`new_id`");
    EXPECT_STATUS(dsh_store_salvage(store, "x", "y", NULL), DSH_INVALID_ARGUMENT, "`out_json`");
    EXPECT_STATUS(dsh_store_import(NULL, "x", "", &out), DSH_INVALID_ARGUMENT, "`store`");
    EXPECT_STATUS(dsh_store_import(store, NULL, "", &out), DSH_INVALID_ARGUMENT, "`new_id`");
    EXPECT_STATUS(dsh_store_import(store, "x", NULL, &out), DSH_INVALID_ARGUMENT, "`jsonl`");
    EXPECT_STATUS(dsh_store_import(store, "x", BAD_UTF8, &out), DSH_INVALID_ARGUMENT, "UTF-8");
    EXPECT_STATUS(dsh_store_import(store, "x", "", NULL), DSH_INVALID_ARGUMENT, "`out_json`");
    EXPECT(out == NULL); /* never written on failure */
}

static void operations(dsh_store *store) {
    char events[4096];
    char *out = NULL;
    dsh_session *live = NULL;

    CHECK(dsh_store_create(store, "{\"id\":\"a\",\"createdAt\":5}"));
    turn_array(events, sizeof events, 1, 0);
    CHECK(dsh_store_append(store, "a", events));
    CHECK(dsh_store_create(store, "{\"id\":\"b\",\"createdAt\":6}"));
    CHECK(dsh_store_append(store, "b", events));

    /* Import: the events of `a` as lines (turn_array's items). */
    CHECK(dsh_store_read_from(store, "a", 0, &out));
    dsh_free(out);
    CHECK(dsh_store_import(store, "c",
                           "{\"type\":\"turn/start\",\"seq\":0,\"time\":1,\"data\":{\"turn\":1}}\n"
                           "{\"type\":\"turn/end\",\"seq\":1,\"time\":2,\"data\":{\"turn\":1,"
                           "\"reason\":{\"kind\":\"completed\"}}}\n",
                           &out));
    EXPECT_RESULT(out, "{\"id\":\"c\",\"events\":2,\"hadHeader\":false}");
    EXPECT_STATUS(dsh_store_import(store, "d", "{\"type\":\"turn/start\",\"seq\":3}\n", &out),
                  DSH_INVALID_ARGUMENT, "");
    EXPECT_STATUS(dsh_store_import(store, "c", "{\"type\":\"turn/start\",\"seq\":0,\"time\":1,"
                                              "\"data\":{\"turn\":1}}\n",
                                   &out),
                  DSH_CONFLICT, "already exists");
    EXPECT(strcmp(dsh_last_error_code(), "SESSION_ALREADY_EXISTS") == 0);

    /* Salvage: a whole, closed log is copied as it is. */
    CHECK(dsh_store_salvage(store, "a", "a2", &out));
    EXPECT_RESULT(out, "\"keptEvents\":6,\"closers\":0,\"stopped\":null");
    EXPECT_STATUS(dsh_store_salvage(store, "nope", "n2", &out), DSH_NOT_FOUND, "not found");

    /* Delete: busy while live, then gone and free. */
    CHECK(dsh_session_resume(store, "b", &live));
    EXPECT_STATUS(dsh_store_delete(store, "b"), DSH_BUSY, "live");
    CHECK(dsh_session_close(live));
    CHECK(dsh_store_delete(store, "b"));
    EXPECT_STATUS(dsh_store_delete(store, "b"), DSH_NOT_FOUND, "session \"b\" not found");
    CHECK(dsh_store_create(store, "{\"id\":\"b\"}"));

    /* Prune: a dry run reports, the real run deletes. */
    CHECK(dsh_store_prune(store, "{\"keepNewest\":1,\"dryRun\":true}", &out));
    EXPECT(count(out, "\"id\":") == 2);
    EXPECT_RESULT(out, "\"dryRun\":true");
    CHECK(dsh_store_list(store, &out));
    EXPECT(count(out, "\"id\":") == 3);
    dsh_free(out);
    CHECK(dsh_store_prune(store, "{\"keepNewest\":0}", &out));
    EXPECT(count(out, "\"id\":") == 3);
    EXPECT_RESULT(out, "\"kept\":0");
    CHECK(dsh_store_list(store, &out));
    EXPECT_RESULT(out, "[]");
}

int main(int argc, char **argv) {
    char config[4096];
    dsh_store *store = NULL;
    EXPECT(argc >= 2);

    store = open_jsonl(argv[1], "manage");
    null_and_utf8_checks(store);
    operations(store);
    CHECK(dsh_store_close(store));

    snprintf(config, sizeof config, "{\"backend\":\"sqlite\",\"path\":\"%s/manage.db\"}", argv[1]);
    CHECK(dsh_store_open(config, &store));
    operations(store);
    CHECK(dsh_store_close(store));
    puts("test_manage: ok");
    return 0;
}
