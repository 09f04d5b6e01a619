/* The catalog reads (list_summaries, search, export, follow), the `_ex`
 * forms with a cancel token and a thread-independent error object, and the
 * paged results (dsh_result), from C. argv[1]: scratch dir. */
#include "common.h"

static void catalog(dsh_store *store) {
    char *out = NULL;
    char events[4096];
    dsh_follow *follow = NULL;

    CHECK(dsh_store_create(store, "{\"id\":\"c1\",\"createdAt\":5}"));
    turn_array(events, sizeof events, 1, 0);
    CHECK(dsh_store_append(store, "c1", events));

    CHECK(dsh_store_list_summaries(store, NULL, &out));
    EXPECT(count(out, "{\"id\":\"c1\"") == 1); /* one summary (its meta names c1 too) */
    EXPECT(strstr(out, "\"eventCount\":6") != NULL);
    EXPECT_RESULT(out, "\"turnCount\":1");
    EXPECT_STATUS(dsh_store_list_summaries(store, "{\"sort\":\"sideways\"}", &out),
                  DSH_INVALID_ARGUMENT, "sort");
    EXPECT_STATUS(dsh_store_list_summaries(NULL, NULL, &out), DSH_INVALID_ARGUMENT, "`store`");

    /* turn_array's user text is "q", the assistant's "a". */
    CHECK(dsh_store_search(store, "\"q\"", &out));
    EXPECT(strstr(out, "\"id\":\"c1\"") != NULL);
    EXPECT_RESULT(out, "\"role\":\"user\"");
    EXPECT_STATUS(dsh_store_search(store, NULL, &out), DSH_INVALID_ARGUMENT, "`query_json`");

    CHECK(dsh_store_export(store, "c1", "md", &out));
    EXPECT(out[0] != '\0');
    dsh_free(out);
    CHECK(dsh_store_export(store, "c1", "html", &out));
    EXPECT_RESULT(out, "<html");
    EXPECT_STATUS(dsh_store_export(store, "c1", "pdf", &out), DSH_INVALID_ARGUMENT, "pdf");
    EXPECT_STATUS(dsh_store_export(store, "nope", "md", &out), DSH_NOT_FOUND, "nope");

    /* A follower from seq 0 sees the stored events, then what comes next. */
    CHECK(dsh_follow_open(store, "c1", 0, &follow));
    CHECK(dsh_follow_next(follow, 0, &out));
    EXPECT(count(out, "\"seq\":") == 6);
    dsh_free(out);
    turn_array(events, sizeof events, 2, 6);
    CHECK(dsh_store_append(store, "c1", events));
    CHECK(dsh_follow_next(follow, 2000, &out));
    EXPECT(strstr(out, "\"seq\":6") != NULL);
    dsh_free(out);
    CHECK(dsh_follow_close(follow));
    CHECK(dsh_follow_close(NULL));
    EXPECT_STATUS(dsh_follow_open(store, "nope", 0, &follow), DSH_NOT_FOUND, "nope");
}

static void ex_forms(dsh_store *store) {
    char *out = NULL;
    dsh_cancel *cancel = NULL;
    dsh_error *err = NULL;

    /* An error object carries status, code and message to any thread. */
    EXPECT(dsh_store_load_ex(store, "nope", &out, NULL, &err) == DSH_NOT_FOUND);
    EXPECT(err != NULL && out == NULL);
    EXPECT(dsh_error_status(err) == DSH_NOT_FOUND);
    EXPECT(strstr(dsh_error_message(err), "nope") != NULL);
    EXPECT(dsh_error_code(err) != NULL);
    CHECK(dsh_error_free(err));
    err = NULL;

    /* A live token: the call runs; a cancelled one: DSH_CANCELLED, nothing
     * changed. */
    CHECK(dsh_cancel_new(&cancel));
    CHECK(dsh_store_load_ex(store, "c1", &out, cancel, &err));
    EXPECT(err == NULL);
    EXPECT_RESULT(out, "\"meta\"");
    CHECK(dsh_cancel_cancel(cancel));
    EXPECT(dsh_store_load_ex(store, "c1", &out, cancel, &err) == DSH_CANCELLED);
    EXPECT(err != NULL && dsh_error_status(err) == DSH_CANCELLED);
    CHECK(dsh_error_free(err));
    err = NULL;
    EXPECT(dsh_store_create_ex(store, "{\"id\":\"c2\",\"createdAt\":5}", cancel, NULL) ==
           DSH_CANCELLED);
    CHECK(dsh_store_list(store, &out));
    EXPECT(strstr(out, "\"c2\"") == NULL); /* the cancelled create made nothing */
    dsh_free(out);
    CHECK(dsh_cancel_free(cancel));

    CHECK(dsh_store_list_summaries_ex(store, NULL, &out, NULL, NULL));
    EXPECT_RESULT(out, "\"c1\"");
    CHECK(dsh_store_export_ex(store, "c1", "md", &out, NULL, NULL));
    dsh_free(out);
}

static void paged(dsh_store *store) {
    dsh_result *result = NULL;
    char *whole = NULL;
    char *part = NULL;
    uint64_t events = 0, bytes = 0, next = 0, first = 0;
    uint64_t live_before = dsh_result_live();

    CHECK(dsh_store_inspect(store, "c1", &whole));
    CHECK(dsh_store_inspect_paged_ex(store, "c1", &result, NULL, NULL));
    EXPECT(dsh_result_live() == live_before + 1);
    CHECK(dsh_result_count(result, &events, &bytes));
    EXPECT(events == 12);
    EXPECT(bytes == strlen(whole));

    /* Slices joined in order are the synchronous text. */
    size_t at = 0;
    uint64_t offset = 0;
    while (offset < bytes) {
        CHECK(dsh_result_text(result, offset, 100, &part, &next));
        EXPECT(next > offset && strlen(part) == next - offset);
        EXPECT(strncmp(whole + at, part, strlen(part)) == 0);
        at += strlen(part);
        offset = next;
        dsh_free(part);
    }
    EXPECT(at == strlen(whole));

    /* Pages of whole events, at least one each, cover every event once. */
    CHECK(dsh_result_head(result, &part));
    EXPECT_RESULT(part, "\"events\":[]");
    int seen = 0;
    while (first < events) {
        CHECK(dsh_result_page(result, first, 1, &part, &next));
        EXPECT(next == first + 1); /* max_bytes 1: one event per page */
        /* "[<event>]", the event byte for byte as in the whole text. */
        size_t len = strlen(part);
        EXPECT(len > 2 && part[0] == '[' && part[len - 1] == ']');
        part[len - 1] = '\0';
        EXPECT(strstr(whole, part + 1) != NULL);
        part[len - 1] = ']';
        seen += count(part, "\"seq\":");
        dsh_free(part);
        first = next;
    }
    EXPECT(seen == 12);
    CHECK(dsh_result_page(result, events, 1000, &part, &next));
    EXPECT(strcmp(part, "[]") == 0 && next == events);
    dsh_free(part);
    EXPECT_STATUS(dsh_result_page(result, 0, 10, NULL, &next), DSH_INVALID_ARGUMENT, "");

    CHECK(dsh_result_free(result));
    EXPECT(dsh_result_live() == live_before);
    CHECK(dsh_result_free(NULL));
    EXPECT_STATUS(dsh_store_load_paged_ex(store, "nope", &result, NULL, NULL), DSH_NOT_FOUND,
                  "nope");
    dsh_free(whole);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s SCRATCH_DIR\n", argv[0]);
        return 2;
    }
    dsh_store *store = open_jsonl(argv[1], "catalog");
    catalog(store);
    ex_forms(store);
    paged(store);
    CHECK(dsh_store_close(store));
    printf("test_catalog_async: ok\n");
    return 0;
}
