/* The `_id_json` calls (DIFFERENCES, exception 2): ids a C string cannot
 * carry, as the original writes them, reached by their JSON string text.
 * argv[1]: scratch dir; argv[2]: a raw JSONL root holding the sessions
 * "a\u0000b" and "\ud800x" (directories `a~0000b`, `~D800x`); argv[3]: a
 * SQLite file holding the session "a\u0000b" (tests/c_abi.rs writes both). */
#include "common.h"

#define NUL_ID "\"a\\u0000b\""
#define LONE_ID "\"\\ud800x\""

static void argument_checks(dsh_store *store) {
    char *out = NULL;
    EXPECT_STATUS(dsh_store_load_id_json(NULL, NUL_ID, &out), DSH_INVALID_ARGUMENT, "`store`");
    EXPECT_STATUS(dsh_store_load_id_json(store, NULL, &out), DSH_INVALID_ARGUMENT,
                  "`id_json` must not be NULL");
    EXPECT_STATUS(dsh_store_load_id_json(store, BAD_UTF8, &out), DSH_INVALID_ARGUMENT, "UTF-8");
    EXPECT_STATUS(dsh_store_load_id_json(store, NUL_ID, NULL), DSH_INVALID_ARGUMENT,
                  "`out_json`");
    /* Not JSON string text: a bare id, two strings, a number. */
    EXPECT_STATUS(dsh_store_load_id_json(store, "a", &out), DSH_INVALID_ARGUMENT,
                  "JSON string text");
    EXPECT_STATUS(dsh_store_read_from_id_json(store, "\"a\" \"b\"", 0, &out),
                  DSH_INVALID_ARGUMENT, "JSON string text");
    EXPECT_STATUS(dsh_store_delete_id_json(store, "1"), DSH_INVALID_ARGUMENT, "JSON string text");
    EXPECT(out == NULL); /* never written on failure */
    /* A new id with U+0000 is still refused at create. */
    EXPECT_STATUS(dsh_store_create(store, "{\"id\":\"c\\u0000d\"}"), DSH_INVALID_ARGUMENT,
                  "U+0000");
}

/* The text of a paged result joined from its slices (freed), as the sync call's. */
static char *joined(dsh_result *r) {
    uint64_t bytes = 0, offset = 0, next = 0;
    CHECK(dsh_result_count(r, NULL, &bytes));
    char *all = calloc(1, (size_t)bytes + 1);
    EXPECT(all != NULL);
    while (offset < bytes) {
        char *piece = NULL;
        CHECK(dsh_result_text(r, offset, 7, &piece, &next));
        memcpy(all + offset, piece, (size_t)(next - offset));
        dsh_free(piece);
        offset = next;
    }
    CHECK(dsh_result_free(r));
    return all;
}

/* The async wrappers' forms (paged, cancellable) reach the same ids and
 * give the same text as the synchronous `_id_json` calls. */
static void async_forms(dsh_store *store) {
    char *sync = NULL, *out = NULL;
    dsh_result *r = NULL;
    dsh_error *err = NULL;
    dsh_cancel *cancel = NULL;
    CHECK(dsh_store_load_id_json(store, NUL_ID, &sync));
    CHECK(dsh_store_load_id_json_paged_ex(store, NUL_ID, &r, NULL, &err));
    EXPECT(err == NULL);
    char *text = joined(r);
    EXPECT(strcmp(text, sync) == 0);
    free(text);
    dsh_free(sync);
    CHECK(dsh_store_inspect_id_json(store, NUL_ID, &sync));
    CHECK(dsh_store_inspect_id_json_paged_ex(store, NUL_ID, &r, NULL, NULL));
    text = joined(r);
    EXPECT(strcmp(text, sync) == 0);
    free(text);
    dsh_free(sync);
    CHECK(dsh_store_read_from_id_json(store, LONE_ID, 1, &sync));
    CHECK(dsh_store_read_from_id_json_paged_ex(store, LONE_ID, 1, &r, NULL, NULL));
    text = joined(r);
    EXPECT(strcmp(text, sync) == 0);
    free(text);
    dsh_free(sync);
    /* Failures carry their message in the error object. */
    r = NULL;
    EXPECT(dsh_store_load_id_json_paged_ex(store, LONE_ID, &r, NULL, &err) == DSH_CORRUPTION);
    EXPECT(err != NULL && dsh_error_status(err) == DSH_CORRUPTION);
    EXPECT(strstr(dsh_error_message(err), "lone surrogate") != NULL);
    CHECK(dsh_error_free(err));
    EXPECT(dsh_store_inspect_id_json_paged_ex(store, "a", &r, NULL, &err) == DSH_INVALID_ARGUMENT);
    EXPECT(strstr(dsh_error_message(err), "JSON string text") != NULL);
    CHECK(dsh_error_free(err));
    EXPECT(r == NULL); /* never written on failure */
    CHECK(dsh_store_read_raw_id_json_ex(store, NUL_ID, &out, NULL, NULL));
    EXPECT_RESULT(out, "\"filename\":\"session.jsonl\"");
    /* A cancelled token stops the read and the delete before they start. */
    CHECK(dsh_cancel_new(&cancel));
    CHECK(dsh_cancel_cancel(cancel));
    EXPECT(dsh_store_load_id_json_paged_ex(store, NUL_ID, &r, cancel, NULL) == DSH_CANCELLED);
    EXPECT(dsh_store_delete_id_json_ex(store, NUL_ID, cancel, &err) == DSH_CANCELLED);
    EXPECT(dsh_error_status(err) == DSH_CANCELLED);
    CHECK(dsh_error_free(err));
    CHECK(dsh_cancel_free(cancel));
    CHECK(dsh_store_load_id_json(store, NUL_ID, &out)); /* still there */
    dsh_free(out);
}

static void jsonl(const char *root) {
    char config[4096];
    char *out = NULL;
    dsh_store *store = NULL;
    snprintf(config, sizeof config, "{\"backend\":\"jsonl\",\"root\":\"%s\",\"compression\":\"none\"}",
             root);
    CHECK(dsh_store_open(config, &store));
    argument_checks(store);

    /* Listed with the ids as stored. */
    CHECK(dsh_store_list(store, &out));
    EXPECT(strstr(out, "\"id\":" NUL_ID) != NULL);
    EXPECT(strstr(out, "\"id\":" LONE_ID) != NULL);
    dsh_free(out);

    /* U+0000: every read. */
    CHECK(dsh_store_inspect_id_json(store, NUL_ID, &out));
    EXPECT_RESULT(out, "\"id\":" NUL_ID);
    CHECK(dsh_store_load_id_json(store, NUL_ID, &out));
    EXPECT_RESULT(out, "turn/end");
    CHECK(dsh_store_read_from_id_json(store, NUL_ID, 1, &out));
    EXPECT(count(out, "\"seq\":") == 1);
    dsh_free(out);
    CHECK(dsh_store_read_raw_id_json(store, " " NUL_ID " ", &out));
    EXPECT_RESULT(out, "\"filename\":\"session.jsonl\"");

    /* A lone surrogate: read_from reaches it; its header fails validation
     * at load as in the original (A.1 #10), and nothing is written. */
    CHECK(dsh_store_read_from_id_json(store, LONE_ID, 0, &out));
    EXPECT(strstr(out, "\"id\":" LONE_ID) != NULL);
    EXPECT(count(out, "\"seq\":") == 2);
    dsh_free(out);
    EXPECT_STATUS(dsh_store_load_id_json(store, LONE_ID, &out), DSH_CORRUPTION, "lone surrogate");
    EXPECT_STATUS(dsh_store_inspect_id_json(store, LONE_ID, &out), DSH_CORRUPTION,
                  "lone surrogate");

    async_forms(store);

    /* Delete, then it is gone. */
    CHECK(dsh_store_delete_id_json(store, NUL_ID));
    EXPECT_STATUS(dsh_store_load_id_json(store, NUL_ID, &out), DSH_NOT_FOUND, "not found");
    EXPECT_STATUS(dsh_store_delete_id_json(store, NUL_ID), DSH_NOT_FOUND, "not found");
    CHECK(dsh_store_close(store));
}

static void sqlite(const char *db) {
    char config[4096];
    char *out = NULL;
    dsh_store *store = NULL;
    snprintf(config, sizeof config, "{\"backend\":\"sqlite\",\"path\":\"%s\"}", db);
    CHECK(dsh_store_open(config, &store));
    CHECK(dsh_store_list(store, &out));
    EXPECT_RESULT(out, "\"id\":" NUL_ID);
    CHECK(dsh_store_load_id_json(store, NUL_ID, &out));
    EXPECT_RESULT(out, "turn/end");
    EXPECT_STATUS(dsh_store_read_raw_id_json(store, NUL_ID, &out), DSH_UNSUPPORTED, "");
    /* The async wrappers' delete. */
    CHECK(dsh_store_delete_id_json_ex(store, NUL_ID, NULL, NULL));
    EXPECT_STATUS(dsh_store_load_id_json(store, NUL_ID, &out), DSH_NOT_FOUND, "not found");
    CHECK(dsh_store_close(store));
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: test_id_json SCRATCH JSONL_ROOT SQLITE_DB\n");
        return 2;
    }
    jsonl(argv[2]);
    sqlite(argv[3]);
    printf("test_id_json: ok\n");
    return 0;
}
